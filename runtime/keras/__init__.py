"""jitflow's Keras-style library (TF's `tf.keras`): layers, models, `compile`/`fit`, losses,
metrics, optimizers and callbacks, on the jitflow runtime.

The public face is `jf.keras` (the `jitflow.keras` package), which adds the TensorBoard
callback from `jitflow.summary`; this runtime package never imports the summary or
tracer packages above it.

    model = jf.keras.Sequential([
        jf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        jf.keras.layers.MaxPool2D(),
        jf.keras.layers.Flatten(),
        jf.keras.layers.Dense(10),
    ])
    model.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    model.fit(x, y, batch_size=64, epochs=2, validation_split=0.1)
"""
from __future__ import annotations

from jitflow.runtime.keras import (activations, backend, callbacks, initializers, layers, losses,
                                   metrics, models, optimizers, saving)
from jitflow.runtime.keras.layers.functional_node import Input
from jitflow.runtime.keras.models import Model, Sequential

__all__ = ["activations", "backend", "callbacks", "initializers", "layers", "losses", "metrics", "models",
           "optimizers", "saving", "Input", "Model", "Sequential"]
