"""What the CUDA op tests share: bring results back from the device, and compare them with the
CPU kernel's (dtype and shape exactly; floats to a tolerance by width, since the device sums in
another order; ints and bools exactly)."""
from __future__ import annotations

from typing import Any

import numpy as np

from jitflow.runtime.execution import device_memory as D

TOLERANCE = {2: 2e-3, 4: 2e-5, 8: 1e-12}


def host(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(D.to_host(r) for r in result)
    return D.to_host(result)


def assert_same(what: str, want: Any, got: Any) -> None:
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    assert len(wants) == len(gots), f"{what}: expected {len(wants)} outputs != got {len(gots)}"
    for w, g in zip(wants, gots):
        w = np.asarray(w)
        assert isinstance(g, np.ndarray), f"{what}: expected an array from the device, got {type(g)}"
        assert (w.dtype, w.shape) == (g.dtype, g.shape), \
            f"{what}: expected {w.dtype}{list(w.shape)} != got {g.dtype}{list(g.shape)}"
        if w.dtype.kind == "f":
            tol = TOLERANCE[w.dtype.itemsize]
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol,
                                       equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)
