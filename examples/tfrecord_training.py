"""Train a classifier fed by a TFRecord input pipeline with prefetch (seed 004's tf.data + TFRecord).

1. Writes a small image dataset as sharded TFRecord files of `jf.train.Example`s (PNG bytes
   and a label), as the seed's cats_vs_dogs conversion does.
2. Reads it back with `jf.data.TFRecordDataset` -> `map(parse_single_example, decode_png,
   num_parallel_calls=AUTOTUNE)` -> `shuffle` -> `batch` -> `prefetch(AUTOTUNE)`.
3. Trains a small MLP with a `jf.function` step, logging loss and accuracy.
   With `--profile`, the second epoch is profiled: TensorBoard's Profile tab then shows
   each step next to the input pipeline's iterator events (`Iterator::Root::Prefetch::...`).

Every epoch's iterator also records how long each step waited for the pipeline; the panel
(`jitflow panel --logdir runs/tfrecord_training`, page "input") says whether training was
input-bound and which fix to try.

Run: python examples/tfrecord_training.py [--logdir runs/tfrecord_training] [--epochs 3] [--profile]
Then: tensorboard --logdir runs/tfrecord_training
"""
import argparse
import os

import numpy as np

import jitflow as jf

SIZE = 8  # images are SIZE x SIZE grey


def make_image(rng: np.random.Generator, label: int) -> np.ndarray:
    """Class 0: horizontal stripes, class 1: vertical stripes; random phase and noise."""
    phase = int(rng.integers(0, 2))
    stripes = ((np.arange(SIZE) + phase) % 2 * 200).astype(np.float32)
    img = np.tile(stripes[:, None], (1, SIZE)) if label == 0 else np.tile(stripes[None, :], (SIZE, 1))
    img = img + rng.normal(0, 40, (SIZE, SIZE))
    return np.clip(img, 0, 255).astype(np.uint8)[:, :, None]


def write_shards(data_dir: str, n: int, shards: int = 2) -> list:
    os.makedirs(data_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = [os.path.join(data_dir, f"train-{k:05d}-of-{shards:05d}.tfrecord") for k in range(shards)]
    writers = [jf.io.TFRecordWriter(p) for p in paths]
    for i in range(n):
        label = i % 2
        png = jf.io.encode_png(make_image(rng, label)).numpy()
        feature = {
            "image": jf.train.Feature(bytes_list=jf.train.BytesList(value=[png])),
            "label": jf.train.Feature(int64_list=jf.train.Int64List(value=[label])),
        }
        example = jf.train.Example(features=jf.train.Features(feature=feature))
        writers[i % shards].write(example.SerializeToString())
    for w in writers:
        w.close()
    return paths


feature_description = {
    "image": jf.io.FixedLenFeature([], jf.string),
    "label": jf.io.FixedLenFeature([], jf.int64),
}


def parse(example_string):
    features = jf.io.parse_single_example(example_string, feature_description)
    image = jf.io.decode_png(features["image"], channels=1)
    image = jf.image.convert_image_dtype(image, jf.float32)      # [0, 1]
    return jf.reshape(image, [SIZE * SIZE]), jf.cast(features["label"], jf.int32)


def make_dataset(paths: list, batch_size: int) -> "jf.data.Dataset":
    ds = jf.data.TFRecordDataset(paths, num_parallel_reads=len(paths))
    ds = ds.map(parse, num_parallel_calls=jf.data.AUTOTUNE)
    ds = ds.shuffle(512, seed=0).batch(batch_size)
    return ds.prefetch(jf.data.AUTOTUNE)


class MLP(jf.Module):
    def __init__(self, hidden: int = 32):
        super().__init__()
        init = jf.initializers.random_normal_initializer(stddev=0.1, seed=1)
        self.w1 = jf.Variable(init([SIZE * SIZE, hidden]), name="w1")
        self.b1 = jf.Variable(jf.zeros([hidden]), name="b1")
        self.w2 = jf.Variable(init([hidden, 2]), name="w2")
        self.b2 = jf.Variable(jf.zeros([2]), name="b2")

    def __call__(self, x):
        h = jf.nn.relu(jf.matmul(x, self.w1) + self.b1)
        return jf.matmul(h, self.w2) + self.b2


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs/tfrecord_training")
    parser.add_argument("--examples", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--profile", action="store_true", help="profile the second epoch")
    args = parser.parse_args(argv)

    paths = write_shards(os.path.join(args.logdir, "data"), args.examples)
    dataset = make_dataset(paths, args.batch_size)
    model = MLP()
    optimizer = jf.optimizers.Adam(learning_rate=0.01)

    @jf.function
    def train_step(images, labels):
        with jf.GradientTape() as tape:
            logits = model(images)
            loss = jf.reduce_mean(jf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        correct = jf.cast(jf.equal(jf.cast(jf.argmax(logits, axis=1), jf.int32), labels), jf.float32)
        return loss, jf.reduce_mean(correct)

    writer = jf.summary.create_file_writer(args.logdir)
    step = 0
    for epoch in range(args.epochs):
        profiling = args.profile and epoch == min(1, args.epochs - 1)
        if profiling:
            jf.profiler.start(args.logdir)
        losses, accs = [], []
        for images, labels in dataset:                 # the prefetch thread fills ahead
            with jf.profiler.Trace("train", step_num=step):
                loss, acc = train_step(images, labels)
            losses.append(float(loss))
            accs.append(float(acc))
            step += 1
        if profiling:
            jf.profiler.stop()
        with writer.as_default():
            jf.summary.scalar("loss", np.mean(losses), step=epoch)
            jf.summary.scalar("accuracy", np.mean(accs), step=epoch)
        print(f"epoch {epoch}: loss {np.mean(losses):.4f} accuracy {np.mean(accs):.3f}")
    writer.close()
    print("wrote", args.logdir)
    return args.logdir


if __name__ == "__main__":
    main()
