"""AutoGraph: rewrite a function's `if`/`while`/`for` so tensor conditions become graph ops.

The conversion is a few AST passes over the function's own source, keeping its line
numbers (tracebacks point at the user's file):

1. `return` inside an `if`/loop → `do_return`/`retval_` flags and guards.
2. `break`/`continue` → per-loop flags, guarded statements and an extra loop test.
3. `if`, `while`, `for` → nested functions plus `ag__.if_stmt/while_stmt/for_stmt`, which
   choose at trace time between Python control flow and `jf.cond`/`jf.while_loop`.
4. Calls to other user functions → `ag__.converted_call`, so their control flow converts.

Python conditions stay Python (loops over Python iterables unroll at trace time). The
converted source is available from `jf.autograph.to_code(fn)`.
"""
from __future__ import annotations

import ast
import collections
import inspect
import linecache
import sys
import textwrap
import threading
import types
import weakref
from typing import Any, Callable, List, Optional, Set, cast

from jitflow.runtime.tracing import autograph_ops
from jitflow.runtime.tracing.autograph_ops import ConversionError

_cache: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


# -- analysis ------------------------------------------------------------------------------
class _Assigned(ast.NodeVisitor):
    """Names bound in a block, not descending into nested scopes."""

    def __init__(self) -> None:
        self.names: List[str] = []

    def _add(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._add(node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def visit_ListComp(self, node: ast.AST) -> None:
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import  # type: ignore[assignment]


def assigned(nodes: List[ast.stmt]) -> List[str]:
    visitor = _Assigned()
    for node in nodes:
        visitor.visit(node)
    return visitor.names


def _contains(nodes: List[ast.stmt], kinds: tuple, stop_at_loops: bool) -> bool:
    """True if a statement of `kinds` occurs in `nodes` (not in nested defs / inner loops)."""
    for node in nodes:
        for child in _walk_stmt(node, stop_at_loops):
            if isinstance(child, kinds):
                return True
    return False


def _walk_stmt(node: ast.AST, stop_at_loops: bool):
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    for field in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, field, []) or []:
            if stop_at_loops and isinstance(child, (ast.For, ast.While)):
                continue
            yield from _walk_stmt(child, stop_at_loops)


# -- builders ------------------------------------------------------------------------------
def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(name, True)], value=value)


def _not(expr: ast.expr) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, args: List[ast.expr]) -> ast.Call:
    return ast.Call(func=func, args=args, keywords=[])


def _str_tuple(names: List[str]) -> ast.Tuple:
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


class _Namer:
    """Fresh names in TF's style: `if_body`, then `if_body_1`, ... never one the function uses."""

    def __init__(self, taken: Set[str]) -> None:
        self._taken = set(taken)

    def new(self, base: str) -> str:
        name, k = base, 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name


def _try_return(value: ast.expr) -> ast.Try:
    """TF's shape of a `return`: `try: do_return = True; retval_ = value except: do_return = False; raise`."""
    return ast.Try(body=[_assign(_Returns.FLAG, ast.Constant(True)), _assign(_Returns.VALUE, value)],
                   handlers=[ast.ExceptHandler(type=None, name=None, body=[
                       _assign(_Returns.FLAG, ast.Constant(False)), ast.Raise(exc=None, cause=None)])],
                   orelse=[], finalbody=[])


def _always_returns(stmts: List[ast.stmt]) -> bool:
    """True if every path through `stmts` ends in a `return` (no loops considered)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


# -- pass 1: returns -----------------------------------------------------------------------
class _Returns:
    FLAG, VALUE = "do_return", autograph_ops.RETURN_VALUE

    def convert(self, fn: ast.FunctionDef) -> None:
        """Every `return` sets `do_return`/`retval_`; the body ends `return fscope.ret(...)` (as TF's)."""
        body = self.block(fn.body, in_loop=False)
        undefined = _call(_ag("UndefinedReturnValue"), [])
        ret = _call(ast.Attribute(value=_name("fscope"), attr="ret", ctx=ast.Load()),
                    [_name(self.VALUE), _name(self.FLAG)])
        fn.body = ([_assign(self.FLAG, ast.Constant(False)), _assign(self.VALUE, undefined)]
                   + body + [ast.Return(value=ret)])

    def block(self, stmts: List[ast.stmt], in_loop: bool) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                out.append(ast.copy_location(_try_return(stmt.value or ast.Constant(None)), stmt))
                if in_loop:
                    out.append(ast.Break())
                return out
            rest = stmts[i + 1:]
            if isinstance(stmt, ast.If) and not stmt.orelse and rest and _always_returns(stmt.body):
                # `if c: ...; return a` then `rest`: TF's shape puts `rest` into the else branch.
                stmt.body = self.block(stmt.body, in_loop)
                stmt.orelse = self.block(rest, in_loop)
                out.append(stmt)
                return out
            if isinstance(stmt, _COMPOUND) and _contains([stmt], (ast.Return,), False):
                loop = isinstance(stmt, (ast.For, ast.While))
                stmt.body = self.block(stmt.body, in_loop or loop)
                if not isinstance(stmt, ast.With) and stmt.orelse:
                    stmt.orelse = self.block(stmt.orelse, in_loop)
                if isinstance(stmt, ast.Try):
                    for handler in stmt.handlers:
                        handler.body = self.block(handler.body, in_loop)
                out.append(stmt)
                if in_loop and loop:
                    out.append(ast.If(test=_name(self.FLAG), body=[ast.Break()], orelse=[]))
                rest = stmts[i + 1:]
                if rest:
                    out.append(ast.If(test=_not(_name(self.FLAG)), body=self.block(rest, in_loop), orelse=[]))
                return out
            out.append(stmt)
        return out


# -- pass 2: break / continue ----------------------------------------------------------------
class _Jumps(ast.NodeTransformer):
    def __init__(self, namer: _Namer) -> None:
        self._namer = namer
        self.flags: Set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node  # nested functions are converted when called

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

    def _loop(self, node):
        self.generic_visit(node)  # inner loops first
        prefix: List[ast.stmt] = []
        # As TF: `break` becomes `break_ = True; continue` and the loop stops on `not break_`;
        # then every `continue` becomes `continue_ = True`, guarding the statements after it.
        if _contains(node.body, (ast.Break,), True):
            flag = self._namer.new("break_")
            self.flags.add(flag)
            node.body = _replace_breaks(node.body, flag)
            prefix.append(_assign(flag, ast.Constant(False)))
            node._ag_extra_test = _not(_name(flag))
            if isinstance(node, ast.While):
                node.test = ast.BoolOp(op=ast.And(), values=[_not(_name(flag)), node.test])
        if _contains(node.body, (ast.Continue,), True):
            flag = self._namer.new("continue_")
            self.flags.add(flag)
            node.body = [_assign(flag, ast.Constant(False))] + _guard(node.body, ast.Continue, flag)
        return prefix + [node] if prefix else node

    visit_For = visit_While = _loop


def _replace_breaks(stmts: List[ast.stmt], flag: str) -> List[ast.stmt]:
    """`break` → `flag = True; continue`, in this loop's body (not in inner loops or functions)."""
    out: List[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Break):
            out += [ast.copy_location(_assign(flag, ast.Constant(True)), stmt), ast.copy_location(ast.Continue(), stmt)]
            continue
        if isinstance(stmt, (ast.If, ast.With, ast.Try)):
            stmt.body = _replace_breaks(stmt.body, flag)
            if not isinstance(stmt, ast.With):
                stmt.orelse = _replace_breaks(stmt.orelse, flag)
            if isinstance(stmt, ast.Try):
                for handler in stmt.handlers:
                    handler.body = _replace_breaks(handler.body, flag)
                stmt.finalbody = _replace_breaks(stmt.finalbody, flag)
        out.append(stmt)
    return out


def _guard(stmts: List[ast.stmt], kind: type, flag: str) -> List[ast.stmt]:
    out: List[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, kind):
            out.append(_assign(flag, ast.Constant(True)))
            return out
        if isinstance(stmt, (ast.If, ast.With, ast.Try)) and _contains([stmt], (kind,), True):
            stmt.body = _guard(stmt.body, kind, flag)
            if not isinstance(stmt, ast.With) and stmt.orelse:
                stmt.orelse = _guard(stmt.orelse, kind, flag)
            out.append(stmt)
            rest = stmts[i + 1:]
            if rest:
                out.append(ast.If(test=_not(_name(flag)), body=_guard(rest, kind, flag), orelse=[]))
            return out
        out.append(stmt)
    return out


# -- pass 3: control flow -------------------------------------------------------------------
class _ControlFlow(ast.NodeTransformer):
    """`if`/`while`/`for` → TF's shape: `get_state`/`set_state`, the body functions, `ag__.*_stmt(...)`.

    Each statement call is marked with its state names (`_ag_names`) for `_bind_undefined`.
    """

    def __init__(self, namer: _Namer, globals_: Set[str], flags: Set[str], fn: ast.FunctionDef) -> None:
        self._namer = namer
        self._globals = globals_
        self._flags = {f for f in flags if f.startswith("continue_")}
        self._loads = _loads(fn)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def _state_defs(self, names: List[str]) -> List[ast.FunctionDef]:
        get_state = _def(self._namer.new("get_state"), _no_args(), [ast.Return(
            value=ast.Tuple(elts=[_name(x) for x in names], ctx=ast.Load()))])
        set_body: List[ast.stmt] = self._declare(names)
        if names:
            set_body.append(ast.Assign(targets=[ast.Tuple(elts=[_name(x, True) for x in names], ctx=ast.Store())],
                                       value=_name("vars_")))
        else:
            set_body.append(ast.Pass())
        set_state = _def(self._namer.new("set_state"), ast.arguments(
            posonlyargs=[], args=[ast.arg(arg="vars_")], kwonlyargs=[], kw_defaults=[], defaults=[]), set_body)
        return [get_state, set_state]

    def _declare(self, names: List[str]) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        local = [x for x in names if x not in self._globals]
        glob = [x for x in names if x in self._globals]
        if local:
            out.append(ast.Nonlocal(names=local))
        if glob:
            out.append(ast.Global(names=glob))
        return out

    def _fn(self, base: str, body: List[ast.stmt], names: List[str],
            args: Optional[List[str]] = None) -> ast.FunctionDef:
        arguments = ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in (args or [])], kwonlyargs=[],
                                  kw_defaults=[], defaults=[])
        return _def(self._namer.new(base), arguments, self._declare(names) + (body or [ast.Pass()]))

    @staticmethod
    def _stmt(helper: str, args: List[ast.expr], names: List[str]) -> ast.Expr:
        call = ast.Expr(_call(_ag(helper), args))
        call._ag_names = names  # type: ignore[attr-defined]
        return call

    def visit_If(self, node: ast.If) -> List[ast.stmt]:
        names = assigned(node.body + node.orelse)
        self.generic_visit(node)
        state = self._state_defs(names)
        body = self._fn("if_body", node.body, names)
        orelse = self._fn("else_body", node.orelse, names)
        call = self._stmt("if_stmt", [node.test, _name(body.name), _name(orelse.name), _name(state[0].name),
                                      _name(state[1].name), _str_tuple(names), ast.Constant(len(names))], names)
        return [*state, body, orelse, call]

    def visit_While(self, node: ast.While) -> List[ast.stmt]:
        names = assigned(node.body)
        self.generic_visit(node)
        state = self._state_defs(names)
        body = self._fn("loop_body", node.body, names)
        test = _def(self._namer.new("loop_test"), _no_args(), [ast.Return(value=node.test)])
        call = self._stmt("while_stmt", [_name(test.name), _name(body.name), _name(state[0].name),
                                         _name(state[1].name), _str_tuple(names),
                                         ast.Dict(keys=[], values=[])], names)
        return [*state, body, test, call, *node.orelse]

    def visit_For(self, node: ast.For) -> List[ast.stmt]:
        every = assigned([ast.Assign(targets=[node.target], value=ast.Constant(None))] + node.body)
        # The iterate and the `continue_` flags are set afresh at the top of every iteration, so
        # they carry nothing between iterations: unless read after the loop, they are local to
        # the body, not loop state (as in TF, whose liveness analysis finds the same).
        fresh = set(assigned([ast.Assign(targets=[node.target], value=ast.Constant(None))]))
        fresh |= {x for x in every if x in self._flags}
        inside = _loads(node)
        names = [x for x in every if x not in fresh or self._loads[x] > inside.get(x, 0)]
        extra = getattr(node, "_ag_extra_test", None)
        self.generic_visit(node)
        state = self._state_defs(names)
        item = self._namer.new("itr")
        bind = ast.Assign(targets=[node.target], value=_name(item))
        body = self._fn("loop_body", [bind] + node.body, names, args=[item])
        out: List[ast.stmt] = [*state, body]
        extra_ref: ast.expr = ast.Constant(None)
        if extra is not None:
            extra_def = _def(self._namer.new("extra_test"), _no_args(), [ast.Return(value=extra)])
            out.append(extra_def)
            extra_ref = _name(extra_def.name)
        opts = ast.Dict(keys=[ast.Constant("iterate_names")], values=[ast.Constant(ast.unparse(node.target))])
        out.append(self._stmt("for_stmt", [node.iter, extra_ref, _name(body.name), _name(state[0].name),
                                           _name(state[1].name), _str_tuple(names), opts], every))
        return out + node.orelse


def _loads(node: ast.AST) -> "collections.Counter[str]":
    """How often each name is read in `node` (nested functions included: they may read it later)."""
    return collections.Counter(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _bind_undefined(stmts: List[ast.stmt], defined: Set[str]) -> List[ast.stmt]:
    """Before each control-flow call, `x = ag__.Undefined('x')` for each state name not yet bound.

    TF does the same: `get_state` then reads every name plainly, and `nonlocal` in the
    generated functions finds a binding. Names assigned earlier (in document order, which is
    execution order at this level: loops are converted) keep their value.
    """
    out: List[ast.stmt] = []
    for stmt in stmts:
        names = getattr(stmt, "_ag_names", None)
        if names is not None:
            for x in names:
                if x not in defined:
                    out.append(_assign(x, _call(_ag("Undefined"), [ast.Constant(x)])))
                    defined.add(x)
        elif isinstance(stmt, (ast.With, ast.Try)):
            stmt.body = _bind_undefined(stmt.body, defined)
            if isinstance(stmt, ast.Try):
                for handler in stmt.handlers:
                    handler.body = _bind_undefined(handler.body, defined)
                stmt.orelse = _bind_undefined(stmt.orelse, defined)
                stmt.finalbody = _bind_undefined(stmt.finalbody, defined)
        out.append(stmt)
        defined.update(assigned([stmt]))
    return out


class _Loads(ast.NodeTransformer):
    """`x` → `ag__.ld(x)` for loads of the user's names; `x += e` → `x = ag__.ld(x); x += e` (TF's shape)."""

    def __init__(self, generated: Set[str]) -> None:
        self._skip = generated | {"ag__", "fscope", "__class__"}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node  # a nested function converts when it is called

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id not in self._skip:
            return ast.copy_location(_call(_ag("ld"), [node]), node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        if isinstance(node.target, ast.Name) and node.target.id not in self._skip:
            reload = ast.copy_location(_assign(node.target.id, _call(_ag("ld"), [_name(node.target.id)])), node)
            return [reload, node]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _FRAME_BUILTINS:
            return node  # these read the caller's frame: they must stay direct calls, unwrapped
        return self.generic_visit(node)


def _no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])


def _def(name: str, args: ast.arguments, body: List[ast.stmt]) -> ast.FunctionDef:
    node = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None)
    if sys.version_info >= (3, 12):  # the field `type_params` is new in 3.12
        node.type_params = []
    return node


# -- pass 4: calls ---------------------------------------------------------------------------
# Builtins that look at the calling frame: calling them through `converted_call` would change
# what they see, so they stay direct calls.
_FRAME_BUILTINS = frozenset({"super", "locals", "globals", "vars", "dir", "eval", "exec"})


class _Calls(ast.NodeTransformer):
    """`f(a, k=b)` → `ag__.converted_call(f, (a,), {'k': b}, fscope)` (None for no keywords), as TF's."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        helper = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):  # lazy thunks keep Python's short-circuiting
            result = _call(_ag(helper), [ast.Lambda(args=_no_args(), body=value),
                                         ast.Lambda(args=_no_args(), body=result)])
        return ast.copy_location(result, node)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        return node

    def __init__(self, first_arg: Optional[str]) -> None:
        self._first_arg = first_arg

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "super" and not node.args and self._first_arg:
            # Zero-argument super() needs the class cell, which a rewritten function lacks.
            node.args = [_name("__class__"), _name(self._first_arg)]
            return node
        if isinstance(func, ast.Name) and func.id in _FRAME_BUILTINS:
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "ag__":
            return node
        if isinstance(func, ast.Attribute) and func.attr == "ret" and isinstance(func.value, ast.Name) \
                and func.value.id == "fscope":
            return node
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return node  # *args / **kwargs calls run unconverted
        args = ast.Tuple(elts=list(node.args), ctx=ast.Load())
        kwargs: ast.expr = (ast.Dict(keys=[ast.Constant(k.arg) for k in node.keywords],
                                     values=[k.value for k in node.keywords]) if node.keywords else ast.Constant(None))
        return ast.copy_location(ast.Call(func=_ag("converted_call"), args=[func, args, kwargs, _name("fscope")],
                                          keywords=[]), node)


# -- driver ------------------------------------------------------------------------------------
def _source_by_indent(code: types.CodeType) -> Optional[str]:
    """The source of `code`'s definition, read as the lines from its first line (the first
    decorator) past the `def` line until the next line indented no deeper; None unless
    that parses (a lambda, a block cut short).

    `inspect.getsource(code)` finds the same text, but first looks for the module of a code
    object by resolving the path of every module loaded (`inspect.getmodule`) and tokenizes
    the block: 50-150 ms on a first call. A block cut short (a dedented line inside a string
    or brackets) does not parse, and the caller falls back to inspect."""
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines):
        return None
    head = lines[first]
    indent = len(head) - len(head.lstrip())
    end = first
    while not lines[end].lstrip().startswith(("def ", "async def ")):  # past the decorators
        end += 1
        if end == len(lines):
            return None
    end += 1
    while end < len(lines):
        line = lines[end]
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and len(line) - len(line.lstrip()) <= indent:
            break
        end += 1
    source = "".join(lines[first:end])
    try:
        ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    return source


def _parse(fn: Callable) -> ast.FunctionDef:
    source = _source_by_indent(fn.__code__)
    if source is None:
        try:
            source = inspect.getsource(fn.__code__)  # the code's own source, never a __wrapped__ one
        except (OSError, TypeError) as e:
            raise ConversionError(f"cannot read the source of {getattr(fn, '__qualname__', fn)}: {e}") from None
    tree = ast.parse(textwrap.dedent(source))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise ConversionError(f"{getattr(fn, '__qualname__', fn)} is not a plain function definition")
    if node.name != fn.__code__.co_name:
        raise ConversionError(f"the source at {fn.__code__.co_filename}:{fn.__code__.co_firstlineno} defines "
                              f"{node.name!r}, not {fn.__code__.co_name!r} (was the file edited since it was "
                              "imported?)")
    # The source starts at the first decorator, which is co_firstlineno in the file.
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    node.decorator_list = []
    return node


def transform(fn: Callable) -> ast.Module:
    """The converted module: `def factory(ag__, <free vars>): def fn(...): ...; return fn`."""
    node = _parse(fn)
    # The user's own `nonlocal` names are bound outside; they need no local binding.
    declared = {name for stmt in ast.walk(node) if isinstance(stmt, ast.Nonlocal) for name in stmt.names}
    namer = _Namer({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                   | {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                   | {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)})
    _Returns().convert(node)
    jumps = _Jumps(namer)
    node.body = _visit_block(jumps, node.body)
    node.body = _visit_block(_Loads(jumps.flags | {_Returns.FLAG, _Returns.VALUE}), node.body)
    globals_ = {name for stmt in ast.walk(node) if isinstance(stmt, ast.Global) for name in stmt.names}
    node.body = _visit_block(_ControlFlow(namer, globals_, jumps.flags, node), node.body)
    first_arg = (node.args.posonlyargs + node.args.args)[0].arg if (node.args.posonlyargs + node.args.args) else None
    calls = _Calls(first_arg if "__class__" in fn.__code__.co_freevars else None)
    node.body = [calls.visit(stmt) for stmt in node.body]
    params = {a.arg for a in node.args.args + node.args.posonlyargs + node.args.kwonlyargs}
    if node.args.vararg:
        params.add(node.args.vararg.arg)
    if node.args.kwarg:
        params.add(node.args.kwarg.arg)
    node.body = _bind_undefined(node.body, params | declared | globals_)
    options = _call(_ag("ConversionOptions"), [])
    options.keywords = [ast.keyword(arg=k, value=v) for k, v in (
        ("recursive", ast.Constant(True)), ("user_requested", ast.Constant(True)),
        ("optional_features", ast.Tuple(elts=[], ctx=ast.Load())), ("internal_convert_user_code", ast.Constant(True)))]
    scope = _call(_ag("FunctionScope"), [ast.Constant(fn.__name__), ast.Constant("fscope"), options])
    node.body = [ast.With(items=[ast.withitem(context_expr=scope, optional_vars=_name("fscope", True))],
                          body=node.body)]
    freevars = list(fn.__code__.co_freevars)
    factory = _def("ag__factory",
                   ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in ["ag__"] + freevars],
                                 kwonlyargs=[], kw_defaults=[], defaults=[]),
                   [node, ast.Return(value=_name(node.name))])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    return module


def _visit_block(visitor: ast.NodeTransformer, stmts: List[ast.stmt]) -> List[ast.stmt]:
    out: List[ast.stmt] = []
    for stmt in stmts:
        result = visitor.visit(stmt)
        if isinstance(result, list):
            out.extend(result)
        elif result is not None:
            out.append(result)
    return out


class _Converted:
    __slots__ = ("code", "source", "__weakref__")

    def __init__(self, code: types.CodeType, source: str) -> None:
        self.code = code
        self.source = source


def _converted(fn: Callable) -> _Converted:
    key = fn.__code__
    with _lock:
        found = _cache.get(key)
    if found is not None:
        return found
    module = transform(fn)
    try:
        code = compile(module, fn.__code__.co_filename, "exec")
    except SyntaxError as e:
        raise ConversionError(f"AutoGraph could not convert {fn.__qualname__}: {e}") from None
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next((c for c in factory_code.co_consts
                  if isinstance(c, types.CodeType) and c.co_name == fn.__code__.co_name), None)
    if inner is None:  # the file on disk no longer holds this function where its code says
        raise ConversionError(f"the source of {fn.__qualname__} at {fn.__code__.co_filename}:"
                              f"{fn.__code__.co_firstlineno} is not its definition (was the file edited "
                              "since it was imported?)")
    result = _Converted(inner, ast.unparse(cast(ast.FunctionDef, module.body[0]).body[0]))
    with _lock:
        _cache[key] = result
    return result


def convert(fn: Callable) -> Callable:
    """`fn` with AutoGraph applied, sharing `fn`'s globals and closure cells.

    The converted code object is bound to the original closure cells, so `nonlocal`
    assignments in converted code update the same variables the original would.
    """
    if inspect.ismethod(fn):
        return convert(fn.__func__).__get__(fn.__self__, type(fn.__self__))
    code = _converted(fn).code
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    own_name_cells = []
    closure = []
    for name in code.co_freevars:
        if name in cells:
            closure.append(cells[name])
        elif name == "ag__":
            closure.append(types.CellType(autograph_ops))
        else:
            # The function's own name, which the factory binds to the converted function:
            # a recursive call must reach what the original would (the global jf.function).
            cell = types.CellType()
            own_name_cells.append((name, cell))
            closure.append(cell)
    new_fn: Any = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure))
    for name, cell in own_name_cells:
        cell.cell_contents = fn.__globals__.get(name, new_fn)
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    new_fn.__qualname__ = fn.__qualname__
    new_fn.__wrapped_original__ = fn
    return new_fn


def to_code(fn: Callable) -> str:
    """The converted Python source of `fn` (TF's `tf.autograph.to_code`).

    >>> def f(x):
    ...     if x > 0:
    ...         x = -x
    ...     return x
    >>> "ag__.if_stmt" in jf.autograph.to_code(f)
    True
    """
    fn = getattr(fn, "python_function", fn)
    if inspect.ismethod(fn):
        fn = fn.__func__
    source = _converted(fn).source
    # TF names the converted function tf__<name>; tutorials print it.
    return source.replace(f"def {fn.__name__}(", f"def tf__{fn.__name__}(", 1) + "\n"


autograph_ops.hooks.convert = convert
