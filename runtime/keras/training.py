"""`Model`: a `Layer` with `compile`, `fit`, `evaluate`, `predict`, `summary` and weights I/O.

Three ways to make one, as in Keras: subclass it and write `call(inputs, training=None)`;
`Sequential([...])`; or the functional API, `Model(inputs=Input(...), outputs=...)`.

`fit` runs `train_step` (forward under a `GradientTape`, loss + layer losses, gradients,
`optimizer.apply_gradients`, metric updates) as one `jf.function`, so it runs on the
compiled tier. The function is traced per distinct batch shape: once for the full
batches and once more for a smaller last batch, and never again in later epochs (fixed
shapes also keep random ops such as Dropout's static). Each step runs inside
`instrument.region("train", step_num=...)`, which a profiler turns into a step marker.
"""
from __future__ import annotations

import os
import types
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from jitflow.runtime.core import instrument
from jitflow.runtime.autodiff.tape import GradientTape
from jitflow.runtime.training.checkpoint import Checkpoint
from jitflow.runtime.tracing.function import Function
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import random_ops as _R
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.keras import callbacks as _cb
from jitflow.runtime.keras import compile_utils as _cu
from jitflow.runtime.keras.functional_order import keras_order
from jitflow.runtime.keras import data_adapter as _data
from jitflow.runtime.keras import distributed as _distributed
from jitflow.runtime.keras import metrics as _metrics
from jitflow.runtime.keras import optimizers as _optimizers
from jitflow.runtime.keras.layers.base import Layer
from jitflow.runtime.keras.layers.functional_node import (KerasTensor, flatten, replay,
                                                          topological_nodes)
from jitflow.runtime.keras.model_summary import print_summary


# Keras's file formats live in `jitflow.runtime.keras.saving`, which builds models from configs and
# so imports this module; it fills these hooks when imported (the `jitflow.runtime.keras` package
# imports it, so they are always set): "save_model", "save_weights", "load_weights". "export" (a
# SavedModel, a stage above) is installed by the `jf.keras` facade.
SAVING_HOOKS: Dict[str, Any] = {}


def _floats(logs: Dict[str, Any]) -> Dict[str, float]:
    return {k: float(v.numpy() if hasattr(v, "numpy") else v) for k, v in logs.items()}


class Model(Layer):
    """A trainable model (TF's `tf.keras.Model`; a `Layer` and a `jf.Module`).

    >>> class MLP(Model):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = jf.keras.layers.Dense(8, activation="relu")
    ...         self.out = jf.keras.layers.Dense(2)
    ...     def call(self, inputs, training=None):
    ...         return self.out(self.hidden(inputs))
    >>> model = MLP(); model.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    """

    def __init__(self, inputs: Any = None, outputs: Any = None, name: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.optimizer: Any = None
        self.compiled_loss: Any = None
        self._compile_loss: Optional[_cu.CompileLoss] = None
        self._compile_metrics: Optional[_cu.CompileMetrics] = None
        self.stop_training = False
        self.history: Optional[_cb.History] = None
        self._train_function = self._test_function = self._predict_function = None
        self._is_compiled = False
        self._functional: Optional[Tuple[Any, Any, List[Any]]] = None  # (inputs, outputs, nodes)
        if inputs is not None or outputs is not None:
            self._init_functional(inputs, outputs)

    # -- the functional API ---------------------------------------------------------------------------------
    def _init_functional(self, inputs: Any, outputs: Any) -> None:
        if inputs is None or outputs is None:
            raise ValueError(f'Model "{self.name}": pass both inputs= and outputs= for a functional model')
        ins = flatten(inputs)
        if not all(isinstance(t, KerasTensor) for t in ins):
            raise TypeError(f'Model "{self.name}": inputs must be jf.keras.Input tensors; got {inputs!r}')
        nodes = topological_nodes(ins, flatten(outputs))
        self._functional = (inputs, outputs, nodes)
        self._input_struct = inputs
        for op in keras_order(inputs, outputs):  # Keras's order: layers, weights and summary follow it
            if isinstance(op, Layer) and all(op is not l for l in self._layers):
                self._layers.append(op)
        self.built = True

    def call(self, inputs: Any, training: Any = None) -> Any:
        """The forward pass; subclasses override it (functional models replay their graph)."""
        if self._functional is None:
            raise NotImplementedError(f'Model "{self.name}" ({type(self).__name__}) has no call(): subclass '
                                      "jf.keras.Model and define call(self, inputs, training=None), or build it "
                                      "with Model(inputs=..., outputs=...)")
        struct, outputs, nodes = self._functional
        ins = flatten(struct)
        if isinstance(inputs, dict) and not isinstance(struct, dict):   # keyed by the Inputs' names
            missing = [t.name for t in ins if t.name not in inputs]
            if missing:
                raise ValueError(f'Model "{self.name}": the inputs dict has keys {sorted(inputs)} but the model\'s '
                                 f"inputs are named {[t.name for t in ins]}")
            inputs = [inputs[t.name] for t in ins]
        values = flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
        if len(values) != len(ins):
            raise ValueError(f'Model "{self.name}" expects {len(ins)} input(s) but it received {len(values)}')
        for spec, value in zip(ins, values):
            dims = tuple(getattr(value, "_dims", np.shape(value)))
            if len(dims) != len(spec._dims) or any(a is not None and b is not None and a != b
                                                   for a, b in zip(spec._dims[1:], dims[1:])):
                raise ValueError(f'Input 0 of layer "{self.name}" is incompatible with the layer: expected shape='
                                 f"{spec.shape}, found shape={tuple(dims)}")
        return replay(nodes, ins, values, outputs, training)

    @property
    def output_names(self) -> List[str]:
        """The outputs' names (a functional model's output layers, or its dict keys); `[]` until a
        subclassed model has been called."""
        if self._functional is not None:
            outputs = self._functional[1]
            if isinstance(outputs, dict):
                return sorted(outputs)
            return [t.node.layer.name if t.node is not None else (t.name or f"output_{i}")
                    for i, t in enumerate(flatten(outputs))]
        return list(getattr(self, "_subclassed_output_names", []))

    def _names_for(self, y_pred: Any) -> List[str]:
        """Output names for a prediction structure (subclassed models: dict keys or `output_<i>`)."""
        names = self.output_names
        if names:
            return names
        names = sorted(y_pred) if isinstance(y_pred, dict) else [f"output_{i}" for i in range(len(y_pred))] \
            if isinstance(y_pred, (list, tuple)) else ["output_0"]
        self._subclassed_output_names = names
        return names

    @property
    def layers(self) -> List[Layer]:
        """The model's direct sub-layers, in the order they were added."""
        return list(self._layers)

    def get_layer(self, name: Optional[str] = None, index: Optional[int] = None) -> Layer:
        if index is not None:
            return self._layers[index]
        for layer in self._layers:
            if layer.name == name:
                return layer
        raise ValueError(f'No such layer: {name}. Existing layers are: {[l.name for l in self._layers]}')

    def _maybe_build(self, inputs: Any) -> None:
        # Sub-layers build themselves on first call; only a user-defined build() runs here.
        if not self.built and type(self).build not in _BUILD_BY_CALLING:
            super()._maybe_build(inputs)
        self.built = True

    def build(self, input_shape: Any) -> None:
        """Build by running the model once on zeros of `input_shape` (batch dimension may be None)."""
        if self.built and self._call_count:
            return
        dims = [1 if d is None else d for d in (input_shape.as_list() if hasattr(input_shape, "as_list")
                                                else list(input_shape))]
        self(np.zeros(dims, self._dtype.as_numpy_dtype))

    # -- compile --------------------------------------------------------------------------------------------
    @_distributed.records_strategy
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Optional[Sequence[Any]] = None,
                loss_weights: Any = None, weighted_metrics: Any = None, run_eagerly: bool = False,
                steps_per_execution: int = 1, jit_compile: Optional[bool] = None, **kwargs: Any) -> None:
        """Set the optimizer, loss and metrics `fit`/`evaluate` use (names or objects)."""
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument(s) {sorted(kwargs)}")
        # Resolve everything before changing the model: a bad name leaves it as it was.
        compile_loss = _cu.CompileLoss(loss, loss_weights) if loss is not None else None
        compile_metrics = _cu.CompileMetrics(metrics, weighted_metrics, loss)
        self.optimizer = _optimizers.get(optimizer)
        self._compile_loss, self._compile_metrics = compile_loss, compile_metrics
        self.compiled_loss = compile_loss.single if compile_loss is not None and compile_loss.single is not None \
            else compile_loss
        self.loss = loss
        self._compile_args = {"loss": loss, "loss_weights": loss_weights, "metrics": metrics,
                              "weighted_metrics": weighted_metrics}   # what model.save writes
        self._loss_tracker = _metrics.Mean(name="loss")
        self.run_eagerly = run_eagerly
        self._jit_compile = jit_compile
        self._train_function = self._test_function = self._predict_function = None
        self._is_compiled = True

    @property
    def compiled_metrics(self) -> List[_metrics.Metric]:
        """The metrics given to `compile` (kept out of `layers`; built on the first batch)."""
        return [m for m, _ in self._compile_metrics.all()] if self._compile_metrics is not None else []

    @property
    def metrics(self) -> List[_metrics.Metric]:
        if not self._is_compiled:
            return []
        trackers = self._compile_loss.trackers if self._compile_loss is not None else []
        return [self._loss_tracker] + self.compiled_metrics + list(trackers)

    @property
    def metrics_names(self) -> List[str]:
        """The names the logs use: `loss`, the compiled metrics (`<output>_<name>` with several
        outputs), then the per-output losses (`<output>_loss`)."""
        if not self._is_compiled:
            return []
        names = [(m.name if m is self._loss_tracker else label) for m, label in self._named_metrics()]
        return names

    def _named_metrics(self) -> List[Tuple[_metrics.Metric, str]]:
        """(metric, log name) in Keras's log order."""
        named: List[Tuple[_metrics.Metric, str]] = [(self._loss_tracker, "loss")]
        if self._compile_metrics is not None:
            named += self._compile_metrics.all()
        if self._compile_loss is not None:
            named += [(t, t.name) for t in self._compile_loss.trackers]
        return named

    def _keras_order(self) -> List[str]:
        """Keras's `_flatten_metrics_in_order` names: the loss, each compiled metric's own name, the
        per-output losses (log keys not among them follow, sorted)."""
        return [m.name for m, _ in self._named_metrics()]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def _require_compiled(self, who: str) -> None:
        if not self._is_compiled:
            raise RuntimeError(f'Model "{self.name}": you must compile your model before {who}: call '
                               "model.compile(optimizer, loss)")
        if who != "predict" and self.compiled_loss is None:
            raise ValueError(f'Model "{self.name}": compile() was called without a loss; {who} needs one')

    # -- steps (override to customise, as in Keras) -----------------------------------------------------------
    def compute_loss(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        """The compiled loss (Σ weightᵢ · lossᵢ over the outputs, each reduced as Keras's
        `sum_over_batch_size`: Σ wⱼ·lossⱼ / batch size) plus the layers' `add_loss` terms."""
        assert self._compile_loss is not None, "_require_compiled checks for a loss"
        loss = self._compile_loss(y, y_pred, sample_weight, self._names_for(y_pred))
        extra = self.losses
        for term in extra:
            loss = M.add(loss, term)
        return loss

    def _update_metrics(self, loss: Tensor, y: Any, y_pred: Any, sample_weight: Any, batch: Any) -> Dict[str, Any]:
        self._loss_tracker.update_state(loss, sample_weight=batch)
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight, self._names_for(y_pred))
        return {name: m.result() for m, name in self._named_metrics()}

    def train_step(self, data: Any) -> Dict[str, Any]:
        """One optimisation step on a batch `(x, y[, sample_weight])`; returns the running logs."""
        x, y, w = _data.unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, w)
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return self._update_metrics(loss, y, y_pred, w, _batch_size(x))

    def test_step(self, data: Any) -> Dict[str, Any]:
        x, y, w = _data.unpack(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, w)
        return self._update_metrics(loss, y, y_pred, w, _batch_size(x))

    def predict_step(self, data: Any) -> Any:
        x, _, _ = _data.unpack(data)
        return self(x, training=False)

    def _compiled(self, step: Any, name: str) -> Any:
        """`step` as a `jf.function` bound to this model (one per model and compile, as in Keras)."""
        step = _distributed.wrap_step(self, step, name.split("_")[0])   # once per replica under a strategy

        def run(model, *batch):
            return step(batch if len(batch) > 1 else (batch[0],))
        run.__name__ = run.__qualname__ = name
        bound = types.MethodType(run, self)
        if self._is_compiled and self.run_eagerly:
            return bound
        return Function(bound, name=name, autograph=False, jit_compile=getattr(self, "_jit_compile", None),
                        _bound_to=self)

    def make_train_function(self) -> Any:
        if self._train_function is None:
            self._train_function = self._compiled(self.train_step, "train_function")
        return self._train_function

    def make_test_function(self) -> Any:
        if self._test_function is None:
            self._test_function = self._compiled(self.test_step, "test_function")
        return self._test_function

    def make_predict_function(self) -> Any:
        if self._predict_function is None:
            self._predict_function = self._compiled(self.predict_step, "predict_function")
        return self._predict_function

    @property
    def train_function(self) -> Any:
        """The `jf.function` `fit` runs (None before the first `fit`)."""
        return self._train_function

    def _build_from(self, x: Any, y: Any = None) -> None:
        """Create the weights eagerly (on one example) before the step function is traced, and the
        compiled loss's and metrics' state (which needs the shapes of `y` and of the outputs)."""
        first = None
        if not self.built or not self._call_count:
            first = _take_first(x)
            self(first)
        needs = (self._compile_loss is not None and not self._compile_loss.built) or (
            self._compile_metrics is not None and not self._compile_metrics.built)
        if self._is_compiled and y is not None and needs:
            y_pred = self(first if first is not None else _take_first(x), training=False)
            names = self._names_for(y_pred)
            if self._compile_loss is not None and not self._compile_loss.built:
                self._compile_loss.build(names)
            if self._compile_metrics is not None and not self._compile_metrics.built:
                self._compile_metrics.build(_take_first(y), y_pred, names)

    def _build_optimizer(self) -> None:
        """Create the optimizer's slots eagerly, as Keras's `optimizer.build(variables)`: the train
        function then traces once per batch shape (creating variables in a trace needs a second trace)."""
        for var in self.trainable_variables:
            self.optimizer._slots_for(var)

    # -- fit / evaluate / predict ---------------------------------------------------------------------------
    @_distributed.in_model_scope
    def fit(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, epochs: int = 1,
            verbose: Any = "auto", callbacks: Optional[Sequence[_cb.Callback]] = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool = True, class_weight: Any = None, sample_weight: Any = None,
            initial_epoch: int = 0, steps_per_epoch: Optional[int] = None, validation_steps: Optional[int] = None,
            validation_batch_size: Optional[int] = None, validation_freq: int = 1) -> _cb.History:
        """Train for `epochs` epochs; returns the `History` (also `model.history`).

        >>> model = jf.keras.Sequential([jf.keras.layers.Dense(1, input_shape=(3,))])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = np.ones((64, 3), np.float32), np.zeros((64, 1), np.float32)
        >>> history = model.fit(x, y, batch_size=32, epochs=2, validation_split=0.2, verbose=0)
        >>> sorted(history.history)
        ['loss', 'val_loss']
        """
        self._require_compiled("fit")
        if not isinstance(epochs, int) or epochs < 0:
            raise ValueError(f"fit: epochs must be a non-negative integer; got {epochs!r}")
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = _data.split(x, y, sample_weight, validation_split)
        train = _data.DataHandler(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, "fit", class_weight)
        val = None
        if validation_data is not None:
            vx, vy, vw = _data.unpack(validation_data) if isinstance(validation_data, tuple) else (
                validation_data, None, None)
            val = _data.DataHandler(vx, vy, vw, validation_batch_size or (batch_size if vy is not None else None),
                                    False, validation_steps, "fit (validation_data)")
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = _cb.CallbackList(callbacks, model=self, epochs=epochs, steps=train.steps, verbose=verbose)
        history = _cb.History()
        cbs.append(history)
        if verbose:
            cbs.append(_cb.ProgbarLogger(verbose))
        # jf.random.set_seed makes the shuffling repeatable (and the workers of a job shuffle alike)
        rng = np.random.default_rng(_distributed.shuffle_seed(self, _R._global_seed))
        train_fn = self.make_train_function()
        self.stop_training = False
        self.history = history
        logs: Dict[str, float] = {}
        cbs.on_train_begin()
        step_num = int(self.optimizer.iterations.numpy())
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            for step, (bx, by, bw) in enumerate(train.batches(rng)):
                self._build_from(bx, by)
                self._build_optimizer()
                cbs.on_train_batch_begin(step)
                batch = (bx, by) if bw is None else (bx, by, bw)
                with instrument.region("train", step_num=step_num):
                    out = train_fn(*batch)
                step_num += 1
                logs = _floats(out)
                cbs.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            epoch_logs = dict(logs)
            if val is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate(val, cbs)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(logs)
        return history

    def _evaluate(self, data: _data.DataHandler, cbs: _cb.CallbackList) -> Dict[str, float]:
        test_fn = self.make_test_function()
        self.reset_metrics()
        logs: Dict[str, float] = {}
        cbs.on_test_begin()
        for step, (bx, by, bw) in enumerate(data.batches()):
            self._build_from(bx, by)
            cbs.on_test_batch_begin(step)
            logs = _floats(test_fn(*((bx, by) if bw is None else (bx, by, bw))))
            cbs.on_test_batch_end(step, logs)
        cbs.on_test_end(logs)
        return logs

    @_distributed.in_model_scope
    def evaluate(self, x: Any = None, y: Any = None, batch_size: Optional[int] = None, verbose: Any = "auto",
                 sample_weight: Any = None, steps: Optional[int] = None, callbacks: Any = None,
                 return_dict: bool = False) -> Any:
        """Loss and metrics over the data: a list (`[loss, *metrics]`, or the loss alone) or a dict."""
        self._require_compiled("evaluate")
        data = _data.DataHandler(x, y, sample_weight, batch_size, False, steps, "evaluate")
        logs = self._evaluate(data, _cb.CallbackList(callbacks, model=self, steps=data.steps))
        if return_dict:
            return logs
        return _cu.ordered_values(logs, self._keras_order())

    @_distributed.in_model_scope
    def predict(self, x: Any, batch_size: Optional[int] = None, verbose: Any = "auto", steps: Optional[int] = None,
                callbacks: Any = None) -> Any:
        """The model's outputs for `x`, batch by batch, joined into numpy arrays."""
        data = _data.DataHandler(x, None, None, batch_size, False, steps, "predict")
        fn = self._compiled(self.predict_step, "predict_function") if self._predict_function is None and \
            not self._is_compiled else self.make_predict_function()
        self._predict_function = fn
        cbs = _cb.CallbackList(callbacks, model=self, steps=data.steps)
        cbs.on_predict_begin()
        parts = []
        for step, (bx, _, _) in enumerate(data.batches()):
            self._build_from(bx)
            cbs.on_predict_batch_begin(step)
            out = fn(bx)
            parts.append(_to_numpy(out))
            cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not parts:
            raise ValueError("predict: the data has no samples")
        return _data.concat(parts)

    @_distributed.in_model_scope
    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, class_weight: Any = None,
                       reset_metrics: bool = True, return_dict: bool = False) -> Any:
        """One `train_step` on the given batch; returns the loss (and metrics)."""
        self._require_compiled("train_on_batch")
        x, y, w = _data._numpy(x), _data._numpy(y), _data._numpy(sample_weight)
        if class_weight is not None:
            _data.check_class_weight(class_weight)
            if w is not None:
                raise ValueError("train_on_batch: you cannot pass class_weight and sample_weight at the same time")
            w = _data.class_weight_to_sample_weight(y, class_weight)
        self._build_from(x, y)
        self._build_optimizer()
        if reset_metrics:
            self.reset_metrics()
        with instrument.region("train", step_num=int(self.optimizer.iterations.numpy())):
            logs = _floats(self.make_train_function()(*((x, y) if w is None else (x, y, w))))
        return logs if return_dict else _cu.ordered_values(logs, self._keras_order())

    @_distributed.in_model_scope
    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False) -> Any:
        self._require_compiled("test_on_batch")
        x, y, w = _data._numpy(x), _data._numpy(y), _data._numpy(sample_weight)
        self._build_from(x, y)
        self.reset_metrics()
        logs = _floats(self.make_test_function()(*((x, y) if w is None else (x, y, w))))
        return logs if return_dict else _cu.ordered_values(logs, self._keras_order())

    @_distributed.in_model_scope
    def predict_on_batch(self, x: Any) -> Any:
        x = _data._numpy(x)
        self._build_from(x)
        return _to_numpy(self.make_predict_function()(x))

    # -- weights and summary ---------------------------------------------------------------------------------
    def save(self, filepath: Any, overwrite: bool = True, include_optimizer: bool = True) -> None:
        """Save the model as a Keras 3 `.keras` file (config, weights, compile state); reload it with
        `jf.keras.models.load_model` (or TF's `keras.models.load_model`).

        >>> import os, tempfile
        >>> model = jf.keras.Sequential([jf.keras.Input((3,)), jf.keras.layers.Dense(2)])
        >>> model.save(os.path.join(tempfile.mkdtemp(), "model.keras"))
        """
        if not overwrite and os.path.exists(os.fspath(filepath)):
            raise FileExistsError(f"save: {os.fspath(filepath)!r} exists and overwrite=False")
        SAVING_HOOKS["save_model"](self, filepath, include_optimizer=include_optimizer)

    def export(self, filepath: Any, format: str = "tf_saved_model", verbose: bool = True,
               input_signature: Any = None) -> None:
        """Export the forward pass (`training=False`) as an inference SavedModel with the `serve`
        endpoint and `serving_default` signature, as Keras 3's `model.export`.

        >>> import os, tempfile
        >>> model = jf.keras.Sequential([jf.keras.Input((3,)), jf.keras.layers.Dense(2)])
        >>> model.export(os.path.join(tempfile.mkdtemp(), "exported"), verbose=False)
        """
        if "export" not in SAVING_HOOKS:
            raise RuntimeError("export: import jitflow.keras (jf.keras) first; it installs the SavedModel exporter")
        SAVING_HOOKS["export"](self, os.fspath(filepath), format=format, verbose=verbose,
                               input_signature=input_signature)

    def save_weights(self, filepath: str, overwrite: bool = True) -> str:
        """Write every weight (and the optimizer's state): to `*.weights.h5` in Keras 3's HDF5 layout,
        else with `jf.train.Checkpoint`; returns the path."""
        if not self.built:
            raise ValueError(f'Model "{self.name}": build the model (call it or fit it) before save_weights')
        if str(filepath).endswith(".weights.h5"):
            if not overwrite and os.path.exists(filepath):
                raise FileExistsError(f"save_weights: {filepath!r} exists and overwrite=False")
            SAVING_HOOKS["save_weights"](self, str(filepath))
            return str(filepath)
        children = {"model": self}
        if self.optimizer is not None:
            children["optimizer"] = self.optimizer
        return Checkpoint(**children).write(str(filepath))

    def load_weights(self, filepath: str) -> Any:
        """Restore weights written by `save_weights` (values are matched by the model's structure)."""
        if str(filepath).endswith(".weights.h5"):
            for message in SAVING_HOOKS["load_weights"](self, str(filepath)):
                warnings.warn(message, stacklevel=2)
            return None
        children = {"model": self}
        if self.optimizer is not None:
            children["optimizer"] = self.optimizer
        return Checkpoint(**children).read(str(filepath)).expect_partial()

    def summary(self, line_length: Optional[int] = None, positions: Any = None, print_fn: Any = None,
                expand_nested: bool = False, show_trainable: bool = False) -> None:
        """Print Keras's table: each layer, its output shape and parameter count, then the totals."""
        print_summary(self, line_length=line_length, print_fn=print_fn)

    _config_class_name = "Functional"   # what from_config rebuilds from a config with layers and inputs

    def get_config(self) -> Dict[str, Any]:
        """Sequential and functional models: Keras 3's config (layers, their connections, input and
        output layers), which `from_config` rebuilds; a subclassed model: the base layer config (name,
        trainable, dtype): override it, adding the arguments `__init__` takes, to make it saveable.

        >>> model = jf.keras.Sequential([jf.keras.Input((3,)), jf.keras.layers.Dense(2)])
        >>> again = jf.keras.Sequential.from_config(model.get_config()); again.count_params()
        8
        """
        if self._is_config_model():
            return SAVING_HOOKS["model_config"](self)["config"]
        return super().get_config()

    def _is_config_model(self) -> bool:
        """Whether Keras's config describes this model: a plain Sequential or functional model."""
        return type(self) is Model and self._functional is not None or \
            type(self)._config_class_name == "Sequential" and type(self).__name__ == "Sequential"

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> "Model":
        """A new (unbuilt weights, fresh values) model from `get_config()`'s result."""
        kind = cls._config_class_name
        if kind == "Sequential" or ("input_layers" in config and "layers" in config):
            return SAVING_HOOKS["from_config"]({"class_name": kind, "config": config}, custom_objects)
        return cls(**config)


_BUILD_BY_CALLING: Set[Callable[..., None]] = {Model.build}


def _take_first(x: Any) -> Any:
    """The first example of a batch (arrays, or a list/dict of them), batch dimension kept."""
    if isinstance(x, dict):
        return {k: v[:1] for k, v in x.items()}
    return [v[:1] for v in x] if isinstance(x, list) else x[:1]


def _batch_size(x: Any) -> Any:
    """Per-example weights of 1: the loss tracker averages batch losses weighted by batch size."""
    dims = getattr(flatten(x)[0], "_dims", None)
    if dims and dims[0] is not None:
        return np.ones((dims[0],), np.float32)
    return None


def _to_numpy(out: Any) -> Any:
    if isinstance(out, dict):
        return {k: v.numpy() for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return [v.numpy() for v in out]
    return out.numpy()


__all__ = ["Model"]
