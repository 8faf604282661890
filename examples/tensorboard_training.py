"""Train a small model and watch it in TensorBoard (seed 004's TensorBoard section).

Run: python examples/tensorboard_training.py [--logdir runs/tensorboard_training] [--steps 100]
Then: tensorboard --logdir runs/tensorboard_training   (Scalars, Histograms, Graphs, Profile)
"""
import argparse

import numpy as np

import jitflow as jf


class Linear(jf.Module):
    def __init__(self):
        super().__init__()
        self.w = jf.Variable(jf.zeros([3, 1]), name="w")
        self.b = jf.Variable(jf.zeros([1]), name="b")

    def __call__(self, x):
        return jf.matmul(x, self.w) + self.b


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs/tensorboard_training")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 3)).astype(np.float32)
    y = (x @ np.array([[2.0], [-1.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    model = Linear()
    optimizer = jf.optimizers.SGD(learning_rate=0.1)

    @jf.function
    def train_step(xb, yb):
        with jf.GradientTape() as tape:
            loss = jf.reduce_mean(jf.square(model(xb) - yb))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    summary_writer = jf.summary.create_file_writer(args.logdir)
    jf.summary.trace_on(graph=True, profiler=True)  # record the graph and where time goes
    for batch_index in range(args.steps):
        loss = train_step(x, y)
        with summary_writer.as_default():          # the writer to use
            jf.summary.scalar("loss", loss, step=batch_index)
            jf.summary.scalar("MyScalar", float(batch_index) ** 0.5, step=batch_index)
            if batch_index == 0:
                jf.summary.trace_export(name="model_trace", step=0, profiler_outdir=args.logdir)
            if batch_index % 10 == 0:
                jf.summary.histogram("w", model.w, step=batch_index)
    summary_writer.close()
    print(f"final loss {float(loss):.6f}; w = {model.w.numpy().ravel()}, b = {model.b.numpy()}")
    print("wrote", args.logdir)
    return args.logdir


if __name__ == "__main__":
    main()
