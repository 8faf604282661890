"""`jf.io.gfile`: TF's file helpers for local paths (`tf.io.gfile`), which input-pipeline code
uses to find and open data files. Plain `os`/`glob`/`shutil` underneath; errors are jitflow's
`NotFoundError` and friends, as TF raises them.
"""
from __future__ import annotations

import glob as _glob
import os
import shutil
from typing import Any, Iterator, List, Tuple

from jitflow.runtime.core.errors import FailedPreconditionError, NotFoundError

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove", "rename",
           "rmtree", "stat", "walk"]


def _p(path: Any) -> str:
    if hasattr(path, "numpy"):
        path = path.numpy()
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    return os.fspath(path)


class GFile:
    """A file object (TF's `tf.io.gfile.GFile`): `with jf.io.gfile.GFile(path, "rb") as f: ...`.

    >>> with jf.io.gfile.GFile("/tmp/labels.txt", "w") as f:   # doctest: +SKIP
    ...     f.write("cat\\ndog\\n")
    """

    def __init__(self, name: Any, mode: str = "r") -> None:
        self.name = _p(name)
        try:
            self._f = open(self.name, mode)
        except FileNotFoundError:
            raise NotFoundError(f"{self.name}; No such file or directory") from None

    def __getattr__(self, attr: str) -> Any:  # read, write, readline, seek, tell, ...
        return getattr(self._f, attr)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._f)

    def size(self) -> int:
        return os.path.getsize(self.name)

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._f.close()


def exists(path: Any) -> bool:
    """Whether `path` exists."""
    return os.path.exists(_p(path))


def isdir(path: Any) -> bool:
    """Whether `path` is a directory."""
    return os.path.isdir(_p(path))


def glob(pattern: Any) -> List[str]:
    """Paths matching a glob pattern (or a list of patterns), sorted.

    >>> jf.io.gfile.glob("/data/train-*.tfrecord")    # doctest: +SKIP
    """
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    return sorted({m for p in patterns for m in _glob.glob(_p(p))})


def listdir(path: Any) -> List[str]:
    """Entries of a directory (names, not paths)."""
    try:
        return sorted(os.listdir(_p(path)))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


def makedirs(path: Any) -> None:
    """Create a directory and its parents; no error if it exists."""
    os.makedirs(_p(path), exist_ok=True)


def mkdir(path: Any) -> None:
    """Create one directory; its parent must exist."""
    try:
        os.mkdir(_p(path))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}: the parent directory does not exist") from None
    except FileExistsError:
        pass


def remove(path: Any) -> None:
    """Delete a file."""
    try:
        os.remove(_p(path))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


def rmtree(path: Any) -> None:
    """Delete a directory tree."""
    try:
        shutil.rmtree(_p(path))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


def rename(src: Any, dst: Any, overwrite: bool = False) -> None:
    """Rename `src` to `dst`; refuses to replace `dst` unless `overwrite`."""
    if not overwrite and os.path.exists(_p(dst)):
        raise FailedPreconditionError(f"rename: {_p(dst)} exists (pass overwrite=True to replace it)")
    os.replace(_p(src), _p(dst))


def copy(src: Any, dst: Any, overwrite: bool = False) -> None:
    """Copy a file; refuses to replace `dst` unless `overwrite`."""
    if not overwrite and os.path.exists(_p(dst)):
        raise FailedPreconditionError(f"copy: {_p(dst)} exists (pass overwrite=True to replace it)")
    shutil.copyfile(_p(src), _p(dst))


def stat(path: Any) -> os.stat_result:
    """The file's `os.stat` result (`.st_size` is TF's `length`)."""
    try:
        return os.stat(_p(path))
    except FileNotFoundError:
        raise NotFoundError(f"{_p(path)}; No such file or directory") from None


def walk(top: Any, topdown: bool = True) -> Iterator[Tuple[str, List[str], List[str]]]:
    """`(dirpath, dirnames, filenames)` for every directory under `top`, as `os.walk`."""
    return os.walk(_p(top), topdown=topdown)
