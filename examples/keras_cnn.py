"""Seed 004's CNN with Keras-style `fit` and the TensorBoard callback.

Run: python examples/keras_cnn.py [--logdir runs/keras_cnn] [--samples 1024] [--epochs 3] [--seed 0]
Then: tensorboard --logdir runs/keras_cnn   (Scalars, Histograms, Images, Graphs, Profile)

The images are synthetic MNIST-shaped data (class k lights up a 6x6 block at one of ten
places), so the example needs no download and reaches ~100 % validation accuracy.
"""
import argparse

import numpy as np

import jitflow as jf


def synthetic_mnist(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = rng.normal(0.0, 0.3, (n, 28, 28, 1)).astype(np.float32)
    for i, label in enumerate(y):
        r, c = divmod(int(label), 5)
        x[i, 3 + r * 12: 9 + r * 12, 2 + c * 5: 7 + c * 5, 0] += 1.5
    return x, y


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs/keras_cnn")
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    jf.random.set_seed(args.seed)   # the same weights and the same shuffling on every run
    layers = jf.keras.layers
    model = jf.keras.Sequential([
        layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        layers.MaxPool2D(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPool2D(),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(10),
    ])
    model.summary()
    model.compile(optimizer=jf.keras.optimizers.Adam(1e-3),
                  loss=jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    x, y = synthetic_mnist(args.samples)
    tensorboard = jf.keras.callbacks.TensorBoard(args.logdir, histogram_freq=1, write_images=True,
                                                 update_freq="batch", profile_batch=(2, 3))
    history = model.fit(x, y, batch_size=64, epochs=args.epochs, validation_split=0.2, callbacks=[tensorboard],
                        verbose=2)
    print(f"final val_accuracy: {history.history['val_accuracy'][-1]:.3f}")
    print(f"logs written to {args.logdir}; run: tensorboard --logdir {args.logdir}")
    return history.history


if __name__ == "__main__":
    main()
