"""The runtime half of AutoGraph: what converted code calls (`ag__.if_stmt(...)`, ...).

Each statement helper decides at trace time: a tensor condition or iterable becomes
`jf.cond` / `jf.while_loop`; anything else runs as ordinary Python (loops unroll).
State moves through `get_state()` / `set_state()` closures over the converted
function's locals, so branches and bodies can be traced as sub-graphs.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence, Tuple

from jitflow.runtime.core import context
from jitflow.runtime.tracing import control_flow
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.core.tensor import SymbolicTensor, Tensor
from jitflow.runtime.ops.math_ops import logical_not
from jitflow.runtime.ops.math_ops import logical_and
from jitflow.runtime.ops.math_ops import logical_or
from jitflow.runtime.ops.array_ops import zeros
from jitflow.runtime.ops.math_ops import greater, less
from jitflow.runtime.core.tensor import EagerTensor
from jitflow.runtime.ops.array_ops import cast, shape
from jitflow.runtime.ops.array_ops import range as array_range
from jitflow.runtime.ops.math_ops import maximum, minimum, reduce_max, reduce_min

RETURN_VALUE = "retval_"


class hooks:
    """Filled in by `runtime.tracing.autograph`, which imports this module: the converter that
    rewrites a called user function, so its control flow converts too."""

    convert: Callable[[Callable], Callable]


class Undefined:
    """Stands for a local that is not (yet) assigned on some path."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise UnboundLocalError(
            f"'{self.name}' is used but was only assigned in some branches or loop iterations; a "
            "variable must be defined on every path before it is used (initialise it before the "
            "`if`/loop, or assign it in both branches).")

    __getattr__ = _fail  # type: ignore[assignment]
    __call__ = __bool__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = _fail
    __truediv__ = __getitem__ = __iter__ = __len__ = __lt__ = __gt__ = __le__ = __ge__ = _fail

    def __repr__(self) -> str:
        return f"Undefined({self.name!r})"


class UndefinedReturnValue(Undefined):
    """`retval_` before a `return` ran (TF's `ag__.UndefinedReturnValue()`)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(RETURN_VALUE)


class ConversionOptions:
    """The options a conversion ran with, as TF's converted code spells them."""

    def __init__(self, recursive: bool = True, user_requested: bool = False,
                 optional_features: tuple = (), internal_convert_user_code: bool = True) -> None:
        self.recursive = recursive
        self.user_requested = user_requested
        self.optional_features = optional_features
        self.internal_convert_user_code = internal_convert_user_code


class FunctionScope:
    """`with ag__.FunctionScope(name, 'fscope', options) as fscope:` around a converted body.

    `fscope.ret(retval_, do_return)` is the function's result: None when no `return` ran.
    """

    def __init__(self, function_name: str, scope_name: str, options: ConversionOptions) -> None:
        self.name = function_name
        self.scope_name = scope_name
        self.options = options

    def __enter__(self) -> "FunctionScope":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def ret(self, value: Any, did_return: Any) -> Any:
        return None if isinstance(value, Undefined) else value


def ld(value: Any) -> Any:
    """A load of a local in converted code: reading a name left undefined on this path fails here."""
    if value.__class__ is Undefined:
        value._fail()
    return value


def never() -> bool:
    """Always False; guards the dead assignments that give converted code its bindings."""
    return False


def retval(value: Any) -> Any:
    return None if isinstance(value, Undefined) else value


def not_(value: Any) -> Any:
    """`not x`: a graph op for tensors, Python's `not` otherwise."""
    if isinstance(value, TensorConvertible):
        value = value._as_tensor()
    if isinstance(value, SymbolicTensor):
        return logical_not(value)
    return not value


def and_(left: Callable[[], Any], right: Callable[[], Any]) -> Any:
    a = left()
    if isinstance(a, SymbolicTensor):
        return logical_and(a, right())
    return right() if a else a


def or_(left: Callable[[], Any], right: Callable[[], Any]) -> Any:
    a = left()
    if isinstance(a, SymbolicTensor):
        return logical_or(a, right())
    return a if a else right()


def read(thunk: Callable[[], Any], name: str) -> Any:
    try:
        return thunk()
    except NameError:
        return Undefined(name)


def _is_tensorlike(value: Any) -> bool:
    return isinstance(value, (Tensor, TensorConvertible))


# -- if ------------------------------------------------------------------------------------
def if_stmt(test: Any, body: Callable[[], None], orelse: Callable[[], None],
            get_state: Callable[[], tuple], set_state: Callable[[tuple], None],
            names: Sequence[str], nouts: Optional[int] = None) -> None:
    if isinstance(test, TensorConvertible):
        test = test._as_tensor()
    if not isinstance(test, SymbolicTensor):
        if body is not None and _truthy(test):
            body()
        elif orelse is not None:
            orelse()
        return
    if test._dims is not None and len(test._dims) != 0:
        # As TF: a tensor `if` needs a scalar condition, caught when the function is traced.
        raise TypeError(f"the condition of a tensor `if` must be a scalar bool tensor; got {test.name} "
                        f"with shape {list(test._dims)} (reduce it first, e.g. jf.reduce_all(...))")
    initial = get_state()

    def branch(fn: Optional[Callable[[], None]]) -> Callable[[], tuple]:
        def run() -> tuple:
            set_state(initial)
            if fn is not None:
                fn()
            return get_state()
        return run

    then_graph, _, then_state = control_flow.trace_subgraph(branch(body), [], "true")
    else_graph, _, else_state = control_flow.trace_subgraph(branch(orelse), [], "false")
    carried = []
    for i, name in enumerate(names):
        a, b = then_state[i], else_state[i]
        if a is b:
            continue  # unchanged by both branches
        if isinstance(a, Undefined) or isinstance(b, Undefined):
            if isinstance(a, Undefined) and isinstance(b, Undefined):
                continue
            if name != RETURN_VALUE:
                missing = "else" if isinstance(b, Undefined) else "if"
                raise ValueError(f"'{name}' must also be initialized in the {missing} branch: it is "
                                 "assigned in only one branch of an `if` on a tensor, so it has no "
                                 "value on the other path. Initialise it before the `if`.")
        carried.append(i)
    then_vals = [_placeholder_for(then_state[i], else_state[i], then_graph) for i in carried]
    else_vals = [_placeholder_for(else_state[i], then_state[i], else_graph) for i in carried]
    result = control_flow.build_if(test, then_graph, then_vals, else_graph, else_vals,
                                   [names[i] for i in carried])
    final = list(initial)
    for i, value in zip(carried, result):
        final[i] = value
    set_state(tuple(final))


def _placeholder_for(value: Any, other: Any, graph: Any) -> Any:
    """An early-return slot left unset on this path gets zeros; the return flag guards its use.

    A composite (TensorArray) still empty on this path is completed like the other branch's.
    """
    if isinstance(value, control_flow.CompositeTensor) and value._needs_probe() and \
            isinstance(other, control_flow.CompositeTensor) and not other._needs_probe():
        with graph.as_default():
            return value._complete(other)
    if not isinstance(value, Undefined):
        return value
    other = convert_to_tensor(other) if not isinstance(other, Tensor) else other
    dims = [0 if d is None else d for d in (other._dims or ())]
    with graph.as_default():
        return zeros(dims, other._dtype)


def _truthy(test: Any) -> bool:
    return bool(test)


# -- while ---------------------------------------------------------------------------------
def while_stmt(test: Callable[[], Any], body: Callable[[], None], get_state: Callable[[], tuple],
               set_state: Callable[[tuple], None], names: Sequence[str], opts: Optional[dict] = None) -> None:
    first = test()
    if isinstance(first, TensorConvertible):
        first = first._as_tensor()
    if not isinstance(first, SymbolicTensor):
        condition = first
        while _truthy(condition):
            body()
            condition = test()
            if isinstance(condition, SymbolicTensor):
                raise TypeError(
                    "a Python `while` loop's condition became a tensor inside the loop; make the "
                    "condition a tensor before the loop (e.g. `i = jf.constant(0)`) so the whole loop "
                    "is converted to jf.while_loop.")
        return
    _tensor_loop(lambda: test(), body, get_state, set_state, names, opts or {})


def _tensor_loop(test: Callable[[], Any], body: Callable[..., None], get_state: Callable[[], tuple],
                 set_state: Callable[[tuple], None], names: Sequence[str], opts: dict,
                 counter: Optional[Tuple[Any, Any, Any]] = None) -> None:
    initial = list(get_state())
    if RETURN_VALUE in names and isinstance(initial[names.index(RETURN_VALUE)], Undefined):
        initial[names.index(RETURN_VALUE)] = _probe_return_value(body, set_state, get_state, initial,
                                                                 names, counter)
        set_state(tuple(initial))
    loop_idx = []
    for i, v in enumerate(initial):
        if isinstance(v, Undefined):
            continue  # first assigned inside the loop: loop-local
        if _is_tensorlike(v) or isinstance(v, (bool, int, float, control_flow.CompositeTensor)):
            loop_idx.append(i)
    loop_names = [names[i] for i in loop_idx]
    init_vals = [initial[i] for i in loop_idx]
    if counter is not None:
        init_vals = [counter[0]] + init_vals
        loop_names = ["<loop counter>"] + loop_names

    def restore(values: Sequence[Any]) -> None:
        state = list(initial)
        offset = 1 if counter is not None else 0
        for i, v in zip(loop_idx, values[offset:]):
            state[i] = v
        set_state(tuple(state))

    def cond_fn(*values: Any) -> Any:
        restore(values)
        if counter is not None:
            i, limit, delta = values[0], counter[1], counter[2]
            in_range = less(i, limit) if _positive(delta) else greater(i, limit)
            extra = test()
            return in_range if extra is None else logical_and(in_range, extra)
        return test()

    def body_fn(*values: Any) -> list:
        restore(values)
        if counter is not None:
            body(values[0])
        else:
            body()
        state = get_state()
        out = [state[i] for i in loop_idx]
        for name, v in zip([names[i] for i in loop_idx], out):
            if isinstance(v, Undefined):
                raise ValueError(f"'{name}' is undefined after an iteration of the loop")
        if counter is not None:
            out = [values[0] + counter[2]] + out
        return out

    result = control_flow.while_loop(cond_fn, body_fn, list(init_vals), _names=loop_names,
                                     shape_invariants=opts.get("shape_invariants"),
                                     maximum_iterations=opts.get("maximum_iterations"))
    if not isinstance(result, list):
        result = [result]
    final = list(initial)
    offset = 1 if counter is not None else 0
    for i, v in zip(loop_idx, result[offset:]):
        final[i] = v
    for i, v in enumerate(initial):
        if isinstance(v, Undefined):
            final[i] = Undefined(names[i])  # loop-locals do not exist after a graph loop
    set_state(tuple(final))


def _probe_return_value(body, set_state, get_state, initial, names, counter) -> Any:
    """A zero of the type a `return` inside a tensor loop produces, to seed the loop variable.

    The body is traced once into a throwaway graph to learn the returned dtype and shape.
    """

    def probe() -> Any:
        set_state(tuple(initial))
        if counter is not None:
            body(convert_to_tensor(counter[0]))
        else:
            body()
        return get_state()[names.index(RETURN_VALUE)]
    _, _, value = control_flow.trace_subgraph(probe, [], "probe")
    set_state(tuple(initial))
    if isinstance(value, Undefined):
        return value
    value = value if isinstance(value, Tensor) else convert_to_tensor(value)
    return zeros([0 if d is None else d for d in (value._dims or ())], value._dtype)


def _positive(delta: Any) -> bool:
    if isinstance(delta, EagerTensor):
        return bool(delta._host() > 0)
    if isinstance(delta, SymbolicTensor):
        node = delta.node
        if node.op.tf_op == "Const":
            return bool(node.attrs["value"] > 0)
        return True
    return delta > 0


# -- for -----------------------------------------------------------------------------------
# Iterables that loop in the graph their own way while tracing (jf.data.Dataset registers
# itself): type -> handler(iterable, extra_test, body, get_state, set_state, names, opts).
_ITERABLE_LOOPS: dict = {}


def register_iterable(cls: type, handler: Callable) -> None:
    _ITERABLE_LOOPS[cls] = handler


def for_stmt(iterable: Any, extra_test: Optional[Callable[[], Any]], body: Callable[[Any], None],
             get_state: Callable[[], tuple], set_state: Callable[[tuple], None], names: Sequence[str],
             opts: Optional[dict] = None) -> None:
    if isinstance(iterable, TensorConvertible):
        iterable = iterable._as_tensor()
    if isinstance(iterable, SymbolicTensor):
        _tensor_for(iterable, extra_test, body, get_state, set_state, names, opts or {})
        return
    if _ITERABLE_LOOPS and context.current_graph() is not None:
        for cls, handler in _ITERABLE_LOOPS.items():
            if isinstance(iterable, cls):
                handler(iterable, extra_test, body, get_state, set_state, names, opts or {})
                return
    for item in iterable:
        if extra_test is not None:
            go = extra_test()
            if isinstance(go, SymbolicTensor):
                raise TypeError(
                    "a `break` or `return` that depends on a tensor inside a loop over a Python "
                    "iterable cannot stop the (unrolled) Python loop; loop over jf.range(...) "
                    "instead so the loop becomes a graph loop.")
            if not _truthy(go):
                break
        body(item)


def _tensor_for(iterable: SymbolicTensor, extra_test, body, get_state, set_state, names, opts) -> None:
    node = iterable.node
    if node.op.tf_op == "Range":  # iterate the counter directly, no materialised range
        start, limit, delta = node.inputs

        def run_body(i: Any) -> None:
            body(i)
        _tensor_loop(extra_test or (lambda: None), run_body, get_state, set_state, names, opts,
                     counter=(start, limit, delta))
        return
    if iterable._dims is None or not iterable._dims:
        raise TypeError(f"cannot iterate over the tensor {iterable.name} of shape "
                        f"{iterable.shape}: a loop needs a tensor of rank >= 1")
    n = shape(iterable)[0]
    zero = convert_to_tensor(0, _dt.int32)
    one = convert_to_tensor(1, _dt.int32)

    def run_element_body(i: Any) -> None:
        body(iterable[i])
    _tensor_loop(extra_test or (lambda: None), run_element_body, get_state, set_state, names, opts,
                 counter=(zero, cast(n, _dt.int32), one))


# -- calls ---------------------------------------------------------------------------------
_SKIP_MODULES = ("jitflow", "numpy", "numba", "builtins", "functools", "math", "abc", "typing",
                 "collections", "itertools", "operator", "inspect", "logging", "warnings")


def converted_call(fn: Callable, args: tuple, kwargs: Optional[dict] = None, caller_fn_scope: Any = None) -> Any:
    """Call `fn`, converting it first when it is user code (so its control flow converts too)."""
    if kwargs is None:
        kwargs = {}
    override = _BUILTINS.get(id(fn))
    if override is not None:
        return override(*args, **kwargs)
    target = _convertible(fn)
    if target is None:
        return fn(*args, **kwargs)
    try:
        converted = hooks.convert(target)
    except ConversionError:
        return fn(*args, **kwargs)
    if inspect.ismethod(fn):
        converted = converted.__get__(fn.__self__, type(fn.__self__))
    return converted(*args, **kwargs)


def _symbolic(*values: Any) -> bool:
    return any(isinstance(v, (SymbolicTensor, TensorConvertible)) for v in values)


def _range(*args: Any) -> Any:
    """`range(n)` on a traced tensor is `jf.range(n)`, so `for i in range(n)` becomes a graph loop."""
    return array_range(*args) if _symbolic(*args) else range(*args)


def _len(value: Any) -> Any:
    if isinstance(value, SymbolicTensor) and value._dims and value._dims[0] is None:
        return shape(value)[0]  # unknown until run: a tensor, as TF's len_
    return len(value)


def _minmax(builtin: Callable, pairwise: Callable, reduce: Callable) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs or not _symbolic(*args):
            return builtin(*args, **kwargs)
        if len(args) == 1:
            return reduce(args[0])
        result = args[0]
        for other in args[1:]:
            result = pairwise(result, other)
        return result
    return call


# Builtins TF's AutoGraph replaces (its py_builtins) where a traced tensor is involved, by id.
_BUILTINS = {id(range): _range, id(len): _len, id(max): _minmax(max, maximum, reduce_max),
             id(min): _minmax(min, minimum, reduce_min)}


def _convertible(fn: Any) -> Optional[Callable]:
    func = fn.__func__ if inspect.ismethod(fn) else fn
    if not inspect.isfunction(func) or getattr(func, "__name__", "") == "<lambda>":
        return None
    if getattr(func, "__jitflow_do_not_convert__", False):
        return None
    # The defining module (functools.wraps copies the wrapped function's __module__).
    module = func.__globals__.get("__name__", "") or ""
    if module.split(".")[0] in _SKIP_MODULES or module.startswith("_pytest"):
        return None
    return func


class ConversionError(Exception):
    """The function's source is unavailable or uses syntax AutoGraph does not convert."""


def do_not_convert(fn: Callable) -> Callable:
    """Decorator: run `fn` as plain Python even inside an AutoGraph-converted function.

    >>> @jf.autograph.do_not_convert
    ... def plain(x):
    ...     return x
    >>> plain(3)
    3
    """
    fn.__jitflow_do_not_convert__ = True  # type: ignore[attr-defined]
    return fn

