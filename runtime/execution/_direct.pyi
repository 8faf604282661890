"""Types of the optional C accelerator `_direct.c` (the direct call path of jf.function)."""
from typing import Any, Dict

ABI_VERSION: int


class FunctionBase:
    """C's base of `Function`: the direct-path fields and a `__call__` that serves settled calls."""

    _direct: Dict[Any, Any]
    _direct_arity: int
    _call_count: int

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def configure(eager_tensor: type, context: Dict[str, Any], registry: Dict[str, Any], instrument: Dict[str, Any],
              ndarray: type, cpu0: str) -> None: ...
