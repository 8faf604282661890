"""`jf.saved_model`: SavedModels in TensorFlow's directory layout (see docs/saved_model.md).

    jf.saved_model.save(demo, "./data/demo/1", signatures={"serving_default": demo.addprint})
    demo2 = jf.saved_model.load("./data/demo/1")
    demo2.addprint(jf.constant(5.0))
"""
from __future__ import annotations

from .functions import UnsupportedOpError
from .load import Loaded, RestoredConcreteFunction, RestoredFunction, load
from .save import (ASSETS_DIRECTORY, DEFAULT_SIGNATURE, SAVED_MODEL_FILENAME, SERVE_TAG, VARIABLES_DIRECTORY,
                   VARIABLES_FILENAME, save)

SaveOptions = dict  # accepted and ignored, as jitflow has no device placement to record
LoadOptions = dict

__all__ = ["save", "load", "Loaded", "RestoredFunction", "RestoredConcreteFunction", "UnsupportedOpError",
           "SAVED_MODEL_FILENAME", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "ASSETS_DIRECTORY",
           "DEFAULT_SIGNATURE", "SERVE_TAG"]
