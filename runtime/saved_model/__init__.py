"""`jf.saved_model`: SavedModels in TensorFlow's directory layout (see docs/saved_model.md).

    jf.saved_model.save(demo, "./data/demo/1", signatures={"serving_default": demo.addprint})
    demo2 = jf.saved_model.load("./data/demo/1")
    demo2.addprint(jf.constant(5.0))

The protobuf machinery loads on first use, so `import jitflow` does not pay for it.
"""
from __future__ import annotations

import importlib
from typing import Any

SAVED_MODEL_FILENAME = "saved_model.pb"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"
DEFAULT_SIGNATURE = "serving_default"
SERVE_TAG = "serve"
SERVING = SERVE_TAG

_LAZY = {"Loaded": "loading", "RestoredFunction": "loading", "RestoredConcreteFunction": "loading",
         "UnsupportedOpError": "function_import"}


def save(obj: Any, export_dir: str, signatures: Any = None, options: Any = None) -> None:
    """Save `obj` (a jf.Module), its variables, traced functions and `signatures` as a SavedModel.

    >>> jf.saved_model.save(demo, "./data/demo/1", signatures={"serving_default": demo.addprint})  # doctest: +SKIP
    """
    from jitflow.runtime.saved_model.saving import save as _save  # lazy: protobuf loads only on save/load
    return _save(obj, export_dir, signatures=signatures, options=options)


def load(export_dir: str, tags: Any = None, options: Any = None) -> Any:
    """Load a SavedModel (jitflow's, or TensorFlow's for ops jitflow implements) as live objects.

    >>> demo2 = jf.saved_model.load("./data/demo/1")   # doctest: +SKIP
    >>> demo2.addprint(jf.constant(5.0))                # doctest: +SKIP
    """
    from jitflow.runtime.saved_model.loading import load as _load  # lazy: protobuf loads only on save/load
    return _load(export_dir, tags=tags, options=options)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jitflow.saved_model' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = ["save", "load", "Loaded", "RestoredFunction", "RestoredConcreteFunction", "UnsupportedOpError",
           "SAVED_MODEL_FILENAME", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "ASSETS_DIRECTORY",
           "DEFAULT_SIGNATURE", "SERVE_TAG", "SERVING"]
