"""Synthetic MNIST-shaped data for the Keras tests: a learnable 10-class task.

Class k puts a bright 6x6 block at one of 10 fixed places on a 28x28 noisy image, so a
small CNN (or an MLP) separates the classes in a few epochs of a few hundred samples.
"""
from __future__ import annotations

import numpy as np


def mnist_like(n: int = 320, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = rng.normal(0.0, 0.3, (n, 28, 28, 1)).astype(np.float32)
    for i, label in enumerate(y):
        r, c = divmod(int(label), 5)
        x[i, 3 + r * 12: 9 + r * 12, 2 + c * 5: 7 + c * 5, 0] += 1.5
    return x, y.astype(np.int64)
