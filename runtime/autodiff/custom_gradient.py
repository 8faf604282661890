"""`jf.custom_gradient` and `jf.UnconnectedGradients`.

`@custom_gradient` functions return `(y, grad_fn)`. The forward ops run with every tape
paused, then one `CustomGradient` op (an identity on `y` whose inputs also include the
function's tensor arguments) is recorded; its gradient calls `grad_fn(dy)`. So the tape
sees exactly what TF's sees: the arguments connected to `y` through `grad_fn` only.
Variables read inside the function are passed to `grad_fn(dy, variables=[...])` when it
accepts `variables`, which then returns `(input_grads, variable_grads)`, as in TF.
"""
from __future__ import annotations

import enum
import functools
import inspect
from typing import Any, Callable, Optional

from jitflow.runtime.autodiff import tape as _tape
from jitflow.runtime.core.nest import flatten, pack
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.ops.registry import apply, register, gradient


class UnconnectedGradients(enum.Enum):
    """What `GradientTape.gradient` returns for a source the target does not depend on.

    >>> UnconnectedGradients.ZERO.value
    'zero'
    """
    NONE = "none"
    ZERO = "zero"


def _identity_n_infer(specs, attrs):
    return [specs[i] for i in range(attrs["n_outputs"])]


def _identity_n_kernel(*values, n_outputs, grad_fn, n_args, variables):
    out = values[:n_outputs]
    return out[0] if n_outputs == 1 else tuple(out)


register("CustomGradient", _identity_n_infer, cpu=_identity_n_kernel, public_name="custom_gradient",
         default_name="CustomGradient")


@gradient("CustomGradient")
def _custom_gradient_grad(rec, grads):
    n_out = rec.attrs["n_outputs"]
    grads = [grads] if n_out == 1 else list(grads)
    outs = rec.outputs
    dys = [convert_to_tensor(0.0, dtype=o.dtype) * o if g is None else g for g, o in zip(grads, outs)]
    grad_fn = rec.attrs["grad_fn"]
    variables = rec.attrs["variables"]
    if variables:
        arg_grads, var_grads = grad_fn(*dys, variables=list(variables))
        var_grads = list(var_grads)
    else:
        arg_grads, var_grads = grad_fn(*dys), []
    arg_grads = list(arg_grads) if isinstance(arg_grads, (list, tuple)) else [arg_grads]
    n_args = rec.attrs["n_args"]
    if len(arg_grads) != n_args:
        raise ValueError(f"custom_gradient: grad_fn returned {len(arg_grads)} gradients for {n_args} "
                         "tensor argument(s); return one per argument (None where there is none)")
    if len(var_grads) != len(variables):
        raise ValueError(f"custom_gradient: grad_fn returned {len(var_grads)} variable gradients for "
                         f"{len(variables)} variable(s) read in the function")
    return [None] * n_out + arg_grads + var_grads


def custom_gradient(f: Optional[Callable] = None) -> Callable:
    """Decorate `f(*args) -> (y, grad_fn)` so that gradients through it use `grad_fn(dy)`.

    >>> @jf.custom_gradient
    ... def clip_grad(x):
    ...     return x * 1.0, lambda dy: jf.clip_by_value(dy, -0.5, 0.5)
    >>> x = jf.constant(2.0)
    >>> with jf.GradientTape() as t:
    ...     t.watch(x)
    ...     y = clip_grad(x) * 10.0
    >>> t.gradient(y, x).numpy()
    np.float32(0.5)
    """
    if f is None:
        return custom_gradient
    if not callable(f):
        raise TypeError(f"f: expected a callable returning (y, grad_fn); got {type(f).__name__}")

    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        tapes = list(_tape._state.tapes)
        paused = [t._recording for t in tapes]
        spy = _tape.GradientTape(watch_accessed_variables=True)
        for t in tapes:
            t._recording = False
        try:
            with spy:  # only to learn which variables f reads
                result = f(*args, **kwargs)
        finally:
            for t, p in zip(tapes, paused):
                t._recording = p
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError("custom_gradient: the decorated function must return (y, grad_fn); got "
                            f"{type(result).__name__}")
        y, grad_fn = result
        if not tapes:
            return y
        arg_tensors = [convert_to_tensor(a) for a in flatten((args, kwargs))
                       if isinstance(a, (Tensor, TensorConvertible)) and not _is_variable(a)]
        takes_variables = "variables" in inspect.signature(grad_fn).parameters
        variables = list(spy.watched_variables()) if takes_variables else []
        if variables and not takes_variables:
            raise TypeError("custom_gradient: the function reads variables, so grad_fn must accept "
                            "`variables=` and return (input_grads, variable_grads)")
        for t in tapes:  # the reads happened while paused: count them as accesses
            if t._watch_accessed:
                for v in variables:
                    if getattr(v, "trainable", False):
                        t.watch(v)
        flat_y = [convert_to_tensor(t) for t in flatten(y)]
        outs = apply("CustomGradient", flat_y + arg_tensors + variables,
                     {"n_outputs": len(flat_y), "grad_fn": grad_fn, "n_args": len(arg_tensors),
                      "variables": tuple(variables)})
        return pack(y, list(outs))

    return decorated


def _is_variable(value: Any) -> bool:
    return isinstance(value, TensorConvertible) and getattr(value, "_captured_as_resource", False)


__all__ = ["custom_gradient", "UnconnectedGradients"]
