"""`jf.test`: TensorFlow's `tf.test` helpers for unit tests of jitflow code.

    >>> import jitflow as jf
    >>> jf.test.is_gpu_available() in (True, False)
    True
"""
from __future__ import annotations

import tempfile
import unittest
from typing import Any, Optional

import numpy as np

import jitflow.runtime.core.devices as _devices
import jitflow.runtime.core.lazyjit as _lazyjit


def _np(value: Any) -> np.ndarray:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, (list, tuple)) and any(hasattr(v, "numpy") for v in value):
        value = [_np(v) for v in value]
    return np.asarray(value)


class TestCase(unittest.TestCase):
    """`unittest.TestCase` with TF's tensor assertions (`assertAllEqual`, `assertAllClose`, ...).

    >>> import jitflow as jf
    >>> class T(jf.test.TestCase):
    ...     def test_add(self):
    ...         self.assertAllEqual(jf.constant([1, 2]) + 1, [2, 3])
    >>> unittest.TextTestRunner(stream=open(__import__("os").devnull, "w")).run(
    ...     unittest.defaultTestLoader.loadTestsFromTestCase(T)).wasSuccessful()
    True
    """

    def evaluate(self, tensors: Any) -> Any:
        """Tensors (or a nest of them) as numpy values, as TF's `self.evaluate`."""
        if isinstance(tensors, dict):
            return {k: self.evaluate(v) for k, v in tensors.items()}
        if isinstance(tensors, (list, tuple)):
            return type(tensors)(self.evaluate(t) for t in tensors)
        return tensors.numpy() if hasattr(tensors, "numpy") else tensors

    def get_temp_dir(self) -> str:
        """A temporary directory for this test, removed when the test ends."""
        tmp = tempfile.TemporaryDirectory(prefix="jf_test_")
        self.addCleanup(tmp.cleanup)
        return tmp.name

    def assertAllEqual(self, a: Any, b: Any, msg: Optional[str] = None) -> None:  # noqa: N802 - TF's names
        a, b = _np(a), _np(b)
        self.assertEqual(a.shape, b.shape, msg or f"shapes differ: {a.shape} != {b.shape}")
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                       msg: Optional[str] = None) -> None:
        a, b = _np(a), _np(b)
        self.assertEqual(a.shape, b.shape, msg or f"shapes differ: {a.shape} != {b.shape}")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg or "")

    def assertNotAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                          msg: Optional[str] = None) -> None:
        a, b = _np(a), _np(b)
        if a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol):
            self.fail(msg or f"expected values that differ; both are {a!r}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertTrue(np.all(_np(a) > comparison_target), f"not all of {_np(a)!r} > {comparison_target}")

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertTrue(np.all(_np(a) < comparison_target), f"not all of {_np(a)!r} < {comparison_target}")

    def assertAllInRange(self, target: Any, lower_bound: Any, upper_bound: Any) -> None:  # noqa: N802
        t = _np(target)
        self.assertTrue(np.all((t >= lower_bound) & (t <= upper_bound)),
                        f"not all of {t!r} in [{lower_bound}, {upper_bound}]")

    def assertShapeEqual(self, a: Any, b: Any) -> None:  # noqa: N802
        self.assertEqual(tuple(_np(a).shape), tuple(b.shape))

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:  # noqa: N802
        self.assertEqual(_np(target).dtype, np.dtype(getattr(expected_dtype, "as_numpy_dtype", expected_dtype)))


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """True if jitflow sees a GPU it can run kernels on (TF's deprecated `tf.test.is_gpu_available`).

    >>> is_gpu_available() in (True, False)
    True
    """
    return bool(_devices.gpus())


def is_built_with_cuda() -> bool:
    """True if numba's CUDA support can be imported (jitflow has no separate CUDA build).

    >>> is_built_with_cuda() in (True, False)
    True
    """
    try:
        _lazyjit.numba()  # never beside a background import of numba (see lazyjit.numba)
        import numba.cuda  # noqa: F401 - only asks whether it imports
    except Exception:  # noqa: BLE001 - any failure means no CUDA support
        return False
    return True


def gpu_device_name() -> str:
    """'/device:GPU:0' when a GPU is available, else '' (as TF).

    >>> gpu_device_name() in ("", "/device:GPU:0")
    True
    """
    return "/device:GPU:0" if is_gpu_available() else ""


def main() -> None:
    """Run the tests of the calling module (TF's `tf.test.main`).

    >>> class AddTest(jf.test.TestCase):
    ...     def test_add(self):
    ...         self.assertAllEqual(jf.add([1], [2]), [3])
    >>> if __name__ == "__main__":   # in a test file
    ...     jf.test.main()
    """
    unittest.main()


__all__ = ["TestCase", "is_gpu_available", "is_built_with_cuda", "gpu_device_name", "main"]
