"""Kernel-level equalities the estimators rely on."""

from __future__ import annotations

import numpy as np
import pytest

from river_pa.linear_model import _numba as _kernels


@pytest.mark.parametrize("rows", [1, 64, 130])  # below, at and across the block size
def test_column_major_batches_equal_row_major(rows):
    rng = np.random.default_rng(rows)
    X = rng.normal(size=(rows, 7))
    y = np.where(rng.random(rows) < 0.5, 1.0, -1.0)
    sw, cols = rng.random(rows), np.array([3, 1, 4, 5, 9, 2, 6])
    results = []
    for batch, learn, margins in ((np.ascontiguousarray(X), _kernels.learn_dense,
                                   _kernels.margins_dense),
                                  (np.asfortranarray(X), _kernels.learn_dense_f,
                                   _kernels.margins_dense_f)):
        w = np.zeros(10)
        out, b, bad = learn(_kernels.CLASSIFY, _kernels.PA_II, 0.7, 0.0, w, 0.0, 1.0, cols,
                            batch, y, sw)
        assert bad == -1
        results.append((out, b, w, margins(w, b, cols, batch)))
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    assert np.abs(results[0][2]).sum() > 0
