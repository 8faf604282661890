"""Data-parallel training as in the seed notes (004, MirroredStrategy), with tf. → jf.

    python examples/distributed_training.py                    # 2 replicas: logical CPUs, one process
    mpiexec -n 2 python examples/distributed_training.py --multi-worker     # 2 workers over MPI

A regression MLP is built in `strategy.scope()`, each global batch is split across the
replicas, gradients are all-reduced by the optimizer, the summed loss is logged to
runs/distributed (the chief) and each worker's own loss to runs/distributed/worker_<rank>;
the chief checkpoints to runs/distributed/ckpt.
"""
import argparse
import os

import numpy as np

import jitflow as jf

GLOBAL_BATCH = 32
STEPS = 30


def make_strategy(multi_worker: bool):
    if multi_worker:
        return jf.distribute.MultiWorkerMirroredStrategy()
    cpu = jf.config.list_physical_devices("CPU")[0]
    jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * 2)
    return jf.distribute.MirroredStrategy()   # every logical CPU (GPUs when there are some)


class Regressor(jf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        with self.name_scope:
            self.w1 = jf.Variable(rng.normal(size=(4, 16)).astype(np.float32) * 0.5, name="w1")
            self.b1 = jf.Variable(np.zeros(16, np.float32), name="b1")
            self.w2 = jf.Variable(rng.normal(size=(16, 1)).astype(np.float32) * 0.5, name="w2")

    def __call__(self, x):
        return jf.matmul(jf.tanh(jf.matmul(x, self.w1) + self.b1), self.w2)


def dataset():
    rng = np.random.default_rng(1)
    true_w = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    for _ in range(STEPS):
        x = rng.normal(size=(GLOBAL_BATCH, 4)).astype(np.float32)
        yield x, np.tanh(x @ true_w).astype(np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--multi-worker", action="store_true")
    parser.add_argument("--logdir", default=os.path.join("runs", "distributed"))
    args = parser.parse_args()

    strategy = make_strategy(args.multi_worker)
    print(f"{strategy!r}: {strategy.num_replicas_in_sync} replicas in sync")
    with strategy.scope():
        model = Regressor()
        optimizer = jf.optimizers.Adam(0.05)
        checkpoint = jf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = jf.train.CheckpointManager(checkpoint, os.path.join(args.logdir, "ckpt"), max_to_keep=2)
    worker_writer = jf.summary.create_file_writer(jf.distribute.worker_logdir(args.logdir))
    job_writer = jf.summary.create_file_writer(args.logdir) if jf.distribute.is_chief() else None

    def step_fn(x, y):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.square(model(x) - y)) / float(GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @jf.function
    def train_step(x, y):
        local = strategy.run(step_fn, args=(x, y))
        return local, strategy.reduce(jf.distribute.ReduceOp.SUM, local, axis=None)

    for step, (x, y) in enumerate(strategy.experimental_distribute_dataset(dataset())):
        local, loss = train_step(x, y)
        with worker_writer.as_default():
            jf.summary.scalar("local_loss", strategy.experimental_local_results(local)[0], step=step)
        if job_writer is not None:
            with job_writer.as_default():
                jf.summary.scalar("loss", loss, step=step)
        if step % 10 == 9:
            manager.save()
            if jf.distribute.is_chief():
                print(f"step {step + 1}: loss {float(loss):.4f}")
    worker_writer.close()
    if job_writer is not None:
        job_writer.close()


if __name__ == "__main__":
    main()
