"""`jf.keras`: Keras-style layers, models, training and callbacks (TF's `tf.keras`).

The library is `jitflow.runtime.keras`; this facade re-exports it and adds what needs
the packages above the runtime: `callbacks.TensorBoard` (from `jitflow.summary`).
Submodules import as in TF: `from jitflow.keras import layers`,
`from jitflow.keras.layers import Dense`, `jf.keras.callbacks.TensorBoard`.

    import jitflow as jf
    model = jf.keras.Sequential([jf.keras.layers.Dense(10, input_shape=(4,))])
    model.compile("adam", "mse")
    model.fit(x, y, epochs=2, callbacks=[jf.keras.callbacks.TensorBoard("logs")])
"""
from __future__ import annotations

import sys as _sys

from jitflow.runtime.keras import (Input, Model, Sequential, activations, backend, initializers, layers,  # noqa: F401
                                   losses, metrics, models, optimizers, saving)
from jitflow.keras import callbacks  # noqa: E402 - the runtime's callbacks plus TensorBoard
from jitflow.runtime.keras import training as _training



def _export(*args, **kwargs):
    from jitflow.runtime.saved_model import keras_export  # lazy: protobuf and the exporter load on first export
    return keras_export.export(*args, **kwargs)


_training.SAVING_HOOKS["export"] = _export

# `import jitflow.keras.layers` and `from jitflow.keras.layers import Dense` work as in TF.
for _name, _module in {"layers": layers, "models": models, "losses": losses, "metrics": metrics,
                       "optimizers": optimizers, "initializers": initializers, "activations": activations,
                       "backend": backend, "saving": saving}.items():
    _sys.modules.setdefault(f"{__name__}.{_name}", _module)

__all__ = ["Input", "Model", "Sequential", "activations", "backend", "callbacks", "initializers", "layers",
           "losses", "metrics", "models", "optimizers", "saving"]
