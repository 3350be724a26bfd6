"""The compiled path's kernels: Numba's, or the interpreter for a small job, and what loading
Numba's costs the evaluate process.

`kernel_tier` runs a job of at most `INTERPRET_VALUES` values in one block in the interpreter
(`river_pa._core.jit`): it is done before Numba would have loaded the kernels from its cache.
`numba_without_blas` keeps Numba's first compile or load from importing SciPy.

"""

from __future__ import annotations

import itertools
import sys

__all__ = ["INTERPRET_VALUES", "kernel_tier", "numba_without_blas"]

# Values (entries + rows) up to which a single-block job runs the array path's kernels in the
# interpreter: about 1 us each, 0.1 s in all, what loading them from Numba's cache costs.
INTERPRET_VALUES = 100_000


def kernel_tier(first, blocks) -> tuple:
    """(the blocks after `first`, "Numba" or why the array path runs its kernels
    interpreted): when `first` is all the events and they hold at most `INTERPRET_VALUES`
    values, the interpreter is done before Numba would have loaded the kernels
    (`river_pa._core.jit`). Peeks at the second block (two chunks in memory at most)."""
    second = next(blocks, None)
    if second is not None:
        return itertools.chain([second], blocks), "Numba"
    size = len(first.csr.data) + len(first)
    if size > INTERPRET_VALUES:
        return blocks, "Numba"
    return blocks, (f"interpreted (a small job, {size:,} values: quicker than loading "
                    "Numba's)")


def numba_without_blas() -> None:
    """Numba imports scipy.linalg (0.2-0.5 s here) the first time it compiles or loads any
    kernel, only to learn whether np.dot may call BLAS; no river_pa kernel uses BLAS. In the
    evaluate command's own process, that check finds no BLAS without importing SciPy (a
    `module:factory` model whose own Numba code calls np.dot would then fail to compile)."""
    blocked = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or blocked in sys.modules:
        return
    sys.modules[blocked] = None  # its import raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules[blocked]
