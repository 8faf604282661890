"""`model.export(path)`: a Keras model as an inference SavedModel (Keras 3's `format="tf_saved_model"`).

As Keras's `ExportArchive`: the model's forward pass with `training=False`, traced for its
input shapes (batch dimension free), saved as the `serve` endpoint and the
`serving_default` signature, with the model's variables. `tf.saved_model.load(path).serve(x)`
(TensorFlow) and `jf.saved_model.load(path).serve(x)` both run it.

It lives in the saved_model stage (above keras); `jf.keras` installs it as the hook
`Model.export` calls.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.keras.layers.functional_node import flatten
from jitflow.runtime.saved_model import save as _save
from jitflow.runtime.state.module import Module
from jitflow.runtime.tracing.function import Function


def input_signature(model: Any) -> List[TensorSpec]:
    """One `TensorSpec` per model input: its declared or last-seen shape, with a free batch dimension."""
    if model._functional is not None:
        return [TensorSpec([None, *t._dims[1:]], t.dtype, name=t.name) for t in flatten(model._functional[0])]
    declared = getattr(model, "_input_dims_declared", None) or (
        model._layers[0]._batch_input_shape if getattr(model, "_layers", None) else None)
    dims = declared or model._input_dims
    if dims is None or dims == "multiple" or (isinstance(dims, tuple) and dims and isinstance(dims[0], tuple)):
        raise ValueError(f'export: cannot tell the input shape of model "{model.name}"; call it on data first or '
                         "pass input_signature=[jf.TensorSpec(shape, dtype)]")
    return [TensorSpec([None, *list(dims)[1:]], model.dtype)]


def export(model: Any, filepath: str, format: str = "tf_saved_model", verbose: bool = True,
           input_signature: Optional[Sequence[TensorSpec]] = None) -> None:
    if format != "tf_saved_model":
        raise ValueError(f"export: format must be 'tf_saved_model' (a SavedModel directory); got {format!r}")
    if not model.built:
        raise ValueError(f'export: model "{model.name}" is not built yet; call it on data or build it first')
    specs = list(input_signature) if input_signature is not None else _signature(model)
    several = len(specs) > 1

    def serve(inputs: Any) -> Any:   # several inputs come as one list, as Keras's export takes them
        return model(list(inputs) if several else inputs, training=False)

    fn = Function(serve, name="serve", input_signature=[specs] if several else specs, autograph=False)
    archive = Module(name="export_archive")
    archive.model = model
    archive.serve = fn
    _save(archive, filepath, signatures={"serving_default": fn})
    if verbose:
        print(f"Saved artifact at '{filepath}'. The following endpoints are available:\n\n* Endpoint 'serve'\n"
              f"  args: {specs}")


_signature = input_signature

__all__ = ["export", "input_signature"]
