"""Run under mpiexec by tests/distribute/test_multi_worker.py: one worker of a training job.

    mpiexec -n 2 python mpi_worker.py train OUT.npz [--traced]
    mpiexec -n 2 python mpi_worker.py keras OUT ROWS          (writes OUT.<rank>.npz)
    mpiexec -n 2 python mpi_worker.py die-after-steps N [kill|exit]   (rank 1 dies at step N)
    mpiexec -n 2 python mpi_worker.py raise-on-rank1
    mpiexec -n 2 python mpi_worker.py twice
"""
import os
import signal
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jitflow as jf  # noqa: E402
import _models  # noqa: E402


def say(line: str) -> None:
    """One line in one write(2): the two workers share mpiexec's stdout pipe, and print() writes
    the text and its newline separately, so lines of the two could interleave."""
    os.write(1, (line + "\n").encode())


def main(argv):
    mode = argv[1]
    strategy = jf.distribute.MultiWorkerMirroredStrategy(collective_timeout=float(os.environ.get("TIMEOUT", "60")),
                                                         bucket_bytes=int(os.environ.get("BUCKET_BYTES", 8 << 20)))
    rank = strategy.cluster_resolver.task_id
    if mode == "train":
        traced = "--traced" in argv
        weights, losses, iterations = _models.train(strategy, traced, clip="--clip" in argv)
        say(f"worker {rank} started {strategy.communicator._ticket} all-reduces during the backward pass")
        ckpt_dir = os.environ.get("CKPT_DIR")
        if ckpt_dir:  # each worker names its own directory: only the chief's may be written
            with strategy.scope():
                ckpt = jf.train.Checkpoint(w=jf.Variable(weights[0]))
            manager = jf.train.CheckpointManager(ckpt, os.path.join(ckpt_dir, f"worker_{rank}"), max_to_keep=1)
            manager.save()
            manager.save()
        if rank == 0:
            np.savez(argv[2], *weights, losses=np.array(losses), iterations=iterations,
                     replicas=strategy.num_replicas_in_sync)
        say(f"worker {rank} done")
    elif mode == "die-after-steps":
        kill_at = int(argv[2])
        how = argv[3] if len(argv) > 3 else "kill"
        with strategy.scope():
            model = _models.MLP()
            optimizer = jf.optimizers.SGD(0.1)
        step = 0
        report = os.environ.get("REPORT_FILE")
        if report:  # what this worker saw, also in a file: the launcher may not forward a dying job's stderr
            previous = sys.excepthook

            def record(kind, value, tb):
                with open(f"{report}.{rank}", "w") as f:
                    f.write(f"{kind.__name__}: {value}\n")
                previous(kind, value, tb)
            sys.excepthook = record
        while True:  # trains forever unless a worker dies
            for x, y in strategy.experimental_distribute_dataset(_models.batches()):
                if rank == 1 and step == kill_at:
                    if how == "exit":  # a silent exit the launcher does not treat as a failure
                        say("worker 1 exiting")
                        os._exit(0)
                    say("worker 1 killing itself")
                    os.kill(os.getpid(), signal.SIGKILL)

                def step_fn(x, y):
                    with jf.GradientTape() as tape:
                        loss = jf.reduce_mean(jf.square(model(x) - y))
                    grads = tape.gradient(loss, model.trainable_variables)
                    optimizer.apply_gradients(zip(grads, model.trainable_variables))
                    return loss
                strategy.run(step_fn, args=(x, y))
                step += 1
                if rank == 0 and step % 5 == 0:
                    say(f"worker 0 step {step}")
    elif mode == "keras":  # Keras fit/evaluate/predict in the strategy's scope; every worker writes its view
        board = [jf.keras.callbacks.TensorBoard(os.environ["TB_LOGDIR"])] if os.environ.get("TB_LOGDIR") else None
        weights, history, evaluated, predicted = _models.keras_fit(
            strategy, rows=int(argv[3]), seed=None if os.environ.get("NO_SEED") else 7, callbacks=board)
        np.savez(f"{argv[2]}.{rank}.npz", *weights, predicted=predicted, replicas=strategy.num_replicas_in_sync,
                 **{f"history_{k}": np.array(v) for k, v in history.items()},
                 **{f"eval_{k}": np.array(v) for k, v in evaluated.items()})
        if os.environ.get("NO_SEED"):  # the seed fit shuffles with when none is set: the chief's, on every worker
            from jitflow.runtime.distribute.keras_support import shuffle_seed
            say(f"worker {rank} shuffle seed {shuffle_seed(strategy, None)}")
        say(f"worker {rank} done")
    elif mode == "profiled":  # trains until LOGDIR/stop appears; worker 1 is slow ("straggler") or retraces
        import time
        logdir, variant = argv[2], argv[3]
        jf.profiler.experimental.server.start_worker(logdir)
        writer = jf.summary.create_file_writer(jf.distribute.worker_logdir(logdir))
        with strategy.scope():
            model = _models.MLP()
            optimizer = jf.optimizers.SGD(0.01)

        def step_fn(x, y):
            with jf.GradientTape() as tape:
                loss = jf.reduce_mean(jf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        @jf.function
        def train_step(x, y):
            return strategy.run(step_fn, args=(x, y))

        rng = np.random.default_rng(rank)
        deadline = time.monotonic() + 120
        step = 0
        with writer.as_default(step=0):
            while True:  # the workers agree when to stop (one could see the stop file a step before the other)
                stop = os.path.exists(os.path.join(logdir, "stop")) or time.monotonic() > deadline
                if any(strategy.communicator.allgather_object(stop, "agreeing to stop")):
                    break
                rows = 8 + (step % 4 if variant == "shapes" and rank == 1 else 0)   # worker 1: other shapes
                x = rng.normal(size=(rows, 3)).astype(np.float32)
                with jf.profiler.experimental.Trace("train", step_num=step, _r=1):
                    if variant == "straggler" and rank == 1:
                        time.sleep(0.03)          # a slow worker: the other waits for it in the all-reduce
                    train_step(x, x[:, :1])
                step += 1
                if step == 3:
                    say(f"worker {rank} training")
        writer.close()
        say(f"worker {rank} done after {step} steps")
    elif mode == "raise-on-rank1":
        with strategy.scope():
            v = jf.Variable([1.0, 2.0])
        if rank == 1:
            raise ValueError("worker 1 found bad data")
        ctx_sum = strategy.run(lambda: jf.distribute.get_replica_context().all_reduce("sum", v * 1.0))
        say(f"worker 0 all-reduced {ctx_sum}")
    elif mode == "summaries":  # each worker logs its loss to <logdir>/worker_<rank>; the chief also to <logdir>
        logdir = argv[2]
        with strategy.scope():
            model = _models.MLP()
            optimizer = jf.optimizers.SGD(0.1, momentum=0.9)   # as _models.train
        writers = [jf.summary.create_file_writer(jf.distribute.worker_logdir(logdir))]
        if jf.distribute.is_chief():
            writers.append(jf.summary.create_file_writer(logdir))
        for step, (x, y) in enumerate(strategy.experimental_distribute_dataset(_models.batches())):
            def step_fn(x, y):
                with jf.GradientTape() as tape:
                    loss = jf.reduce_sum(jf.square(model(x) - y)) / float(_models.GLOBAL_BATCH)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss
            local = strategy.run(step_fn, args=(x, y))
            total = strategy.reduce("sum", local, axis=None)
            with writers[0].as_default():
                jf.summary.scalar("local_loss", local, step=step)
            if len(writers) > 1:
                with writers[1].as_default():
                    jf.summary.scalar("loss", total, step=step)
        for w in writers:
            w.close()
    elif mode == "twice":
        try:
            jf.distribute.MultiWorkerMirroredStrategy()
        except RuntimeError as e:
            say(f"worker {rank} second strategy: {e}")
    elif mode == "collectives":
        with strategy.scope():
            v = jf.Variable(np.full(3, float(rank + 1), np.float32))   # broadcast from rank 0: all ones
        out = strategy.run(lambda: jf.distribute.get_replica_context().all_reduce("sum", v * float(rank + 1)))
        mean = strategy.reduce("mean", jf.constant([float(rank), 10.0]), axis=0)
        gathered = strategy.run(lambda: jf.distribute.get_replica_context().all_gather(
            jf.constant([[float(rank)]]), axis=0))
        # fused buckets: mixed dtypes, 0-d arrays, arrays larger than a bucket, several per bucket
        def floats(r):
            rng = np.random.default_rng(r)
            return [rng.normal(size=n).astype(np.float32) for n in (1, 7, 40, 3)]
        arrays = floats(rank) + [np.arange(5, dtype=np.int64) * (rank + 1), np.float64(rank + 0.5),
                                 np.ones((2, 3), np.float32)]
        summed = strategy.communicator.allreduce(arrays)
        ok = all(np.allclose(summed[i], a + b) for i, (a, b) in enumerate(zip(floats(0), floats(1))))
        ok = ok and summed[4].tolist() == [0, 3, 6, 9, 12] and summed[5].shape == () and float(summed[5]) == 2.0
        ok = ok and summed[6].shape == (2, 3) and np.all(summed[6] == 2.0) and summed[4].dtype == np.int64
        say(f"worker {rank} buckets {'ok' if ok else 'WRONG'}")
        say(f"worker {rank} v={v.numpy().tolist()} sum={out.numpy().tolist()} mean={float(mean)} "
              f"gather={gathered.numpy().ravel().tolist()} logdir={jf.distribute.worker_logdir('logs')}")


if __name__ == "__main__":
    main(sys.argv)
