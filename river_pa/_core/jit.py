"""Numba kernels run by the interpreter where compiling them costs more than the work.

A job that calls a kernel once pays Numba before the first value: 0.1-0.15 s to load the
kernels of `river-pa evaluate`'s array path from Numba's cache, 1.3-2 s to compile them on the
first run after install. The same kernels' Python functions, run by the interpreter over the
same numpy arrays, take about 1 us per value: River's Phishing (1,250 events, 11,250 values)
in 11 ms. Inside `interpreted()`, `kernel(k)` is the Python function of `k`; elsewhere `k`
itself. The results are bit for bit the compiled ones: the same operations in the same order
on float64 (tests/evaluate/test_evaluate.py compares both with River). Written by hand:
Numba's own switch (`NUMBA_DISABLE_JIT`) is process-wide and fixed at import.

Batch entry points only (one call per batch); the per-event kernels are always compiled.

"""

from __future__ import annotations

import contextlib
import contextvars
import types

import numpy as np

__all__ = ["interpreted", "kernel"]

_INTERPRET = contextvars.ContextVar("river_pa_interpret", default=False)
_PYTHON: dict = {}


@contextlib.contextmanager
def interpreted():
    """Make `kernel` return Python functions in this context (thread, task); float64
    overflow gives inf quietly, as in compiled code.

    >>> from river_pa.evaluate.fastmetrics import _sigmoid
    >>> with interpreted():
    ...     kernel(_sigmoid)(0.0), kernel(_sigmoid) is _sigmoid
    (0.5, False)
    >>> kernel(_sigmoid) is _sigmoid
    True

    """
    token = _INTERPRET.set(True)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            yield
    finally:
        _INTERPRET.reset(token)


def kernel(dispatcher):
    """`dispatcher` (a Numba `njit` function), or its Python function inside `interpreted()`."""
    return _python(dispatcher) if _INTERPRET.get() else dispatcher


def _python(dispatcher):
    """The Python function of `dispatcher` with every kernel it names (a global) replaced by
    its own Python function, recursively: calling a dispatcher from Python would compile it."""
    func = _PYTHON.get(dispatcher)
    if func is None:
        from numba.core.dispatcher import Dispatcher

        py = dispatcher.py_func
        scope = dict(py.__globals__)
        func = _PYTHON[dispatcher] = types.FunctionType(py.__code__, scope, py.__name__,
                                                        py.__defaults__, py.__closure__)
        for name in py.__code__.co_names:
            if isinstance(scope.get(name), Dispatcher):
                scope[name] = _python(scope[name])
    return func
