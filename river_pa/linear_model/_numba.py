"""Numba kernels of the linear Passive-Aggressive learners (no River imports here).

Shapes: `w` is the float64 weight vector (length = number of feature positions); a sparse
event is `idx` (int64, n) and `val` (float64, n); a dense batch is `X` (float64, rows x cols)
with `cols` (int64) the weight position of each column; a CSR batch is `indptr`, `indices`,
`data` as in scipy. Labels `y` are +-1 for classification and real targets for regression;
`sw` are sample weights (>= 0).

Every kernel sums in the order of the features and adds the intercept last, exactly as the
per-event path does, so that a batch gives bit-for-bit the weights of a `learn_one` loop.

Source: Crammer et al. (2006), Online Passive-Aggressive Algorithms, JMLR 7. Binary step
sizes: Section 3, Figure 1 (Knowl 1); regression: Section 5 (Knowl 4).

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core._numba import PA, PA_I, PA_II, step_size  # noqa: F401 (the variant codes)

CLASSIFY, REGRESS = 0, 1


@njit(cache=True)
def signed_step(task: int, variant: int, margin: float, y: float, sq_norm: float,
                c: float, epsilon: float) -> float:
    """The signed step s of the update w += s * x, for one event.

    Classification: hinge loss max(0, 1 - y m), s = tau y. Regression: epsilon-insensitive loss
    max(0, |m - y| - epsilon), s = tau sign(y - m).

    """
    if task == CLASSIFY:
        return step_size(variant, 1.0 - y * margin, sq_norm, c) * y
    loss = abs(margin - y) - epsilon
    tau = step_size(variant, loss, sq_norm, c)
    return tau if y > margin else -tau


@njit(cache=True)
def dot_sq(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """(w . x, ||x||^2) of a sparse event."""
    s = 0.0
    q = 0.0
    for j in range(idx.shape[0]):
        v = val[j]
        s += w[idx[j]] * v
        q += v * v
    return s, q


@njit(cache=True)
def dot_sq_packed(w: np.ndarray, idx: np.ndarray, packed: bytes) -> tuple[float, float]:
    """`dot_sq` with the values as packed float64 bytes (`struct.pack`), read in place."""
    return dot_sq(w, idx, np.frombuffer(packed, dtype=np.float64))


@njit(cache=True)
def axpy(w: np.ndarray, idx: np.ndarray, val: np.ndarray, step: float) -> None:
    """w[idx] += step * val, in place."""
    for j in range(idx.shape[0]):
        w[idx[j]] += step * val[j]


@njit(cache=True)
def _fits(w, idx, val, step, b):
    """Whether w[idx] + step * val and b stay finite float64."""
    if not abs(b) < np.inf:
        return False
    for j in range(idx.shape[0]):
        if not abs(w[idx[j]] + step * val[j]) < np.inf:
            return False
    return True


@njit(cache=True)
def step_fits(task, variant, w, b, intercept, idx, val, margin, sq_norm, y, c, epsilon):
    """Whether `update` would take its step (it fits in float64), without changing anything."""
    step = signed_step(task, variant, margin, y, sq_norm + intercept, c, epsilon)
    return step == 0.0 or _fits(w, idx, val, step, b + step * intercept)


@njit(cache=True)
def update(task, variant, w, b, intercept, idx, val, margin, sq_norm, y, c, epsilon):
    """Apply one PA update given the event's margin and ||x||^2 (intercept excluded).

    `intercept` is 1.0 when the intercept is learned (a constant feature of value 1, counted in
    ||x||^2) and 0.0 otherwise. Returns (new intercept, signed step); a step that would take a
    weight or the intercept out of float64 is not taken, and the step returned is then NaN.

    """
    step = signed_step(task, variant, margin, y, sq_norm + intercept, c, epsilon)
    if step != 0.0:
        b_new = b + step * intercept
        if not _fits(w, idx, val, step, b_new):
            return b, np.nan
        axpy(w, idx, val, step)
        b = b_new
    return b, step


@njit(cache=True)
def update_packed(task, variant, w, b, intercept, idx, packed, margin, sq_norm, y, c, epsilon):
    """`update` with the values as packed float64 bytes, read in place."""
    return update(task, variant, w, b, intercept, idx, np.frombuffer(packed, dtype=np.float64),
                  margin, sq_norm, y, c, epsilon)


@njit(cache=True)
def _learn_row(task, variant, w, b, intercept, idx, val, y, c, epsilon):
    """One PA update from scratch; returns (new intercept, margin before the update, step)."""
    s, q = dot_sq(w, idx, val)
    b_new, step = update(task, variant, w, b, intercept, idx, val, b + s, q, y, c, epsilon)
    return b_new, b + s, step


@njit(cache=True)
def learn_dense(task, variant, C, epsilon, w, b, intercept, cols, X, y, sw):
    """Run the rows of a dense batch through the PA update, in order.

    Returns the margins predicted before each update (float64, rows), which is progressive
    validation, the final intercept, and -1, or the first row whose step would have left
    float64 (see `update`): the loop stops there, that row unlearned.

    """
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        b, out[i], step = _learn_row(task, variant, w, b, intercept, cols, X[i], y[i],
                                     C * sw[i], epsilon)
        if step != step:
            return out, b, i
    return out, b, -1


@njit(cache=True)
def learn_csr(task, variant, C, epsilon, w, b, intercept, indptr, indices, data, y, sw):
    """`learn_dense` for a CSR batch."""
    out = np.empty(indptr.shape[0] - 1)
    for i in range(out.shape[0]):
        lo, hi = indptr[i], indptr[i + 1]
        b, out[i], step = _learn_row(task, variant, w, b, intercept, indices[lo:hi],
                                     data[lo:hi], y[i], C * sw[i], epsilon)
        if step != step:
            return out, b, i
    return out, b, -1


@njit(cache=True)
def margins_dense(w, b, cols, X):
    """b + w . x for every row of a dense batch (float64, rows)."""
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        s, _ = dot_sq(w, cols, X[i])
        out[i] = b + s
    return out


BLOCK = 64


@njit(cache=True)
def _c_block(X, lo, hi, buf):
    """Rows lo..hi of a column-major X copied into the C-order buffer, column by column.

    Reading 64 consecutive rows of one column is contiguous, so this is the cache- and
    TLB-friendly way to turn a pandas (column-major) batch into rows.

    """
    for j in range(X.shape[1]):
        for i in range(lo, hi):
            buf[i - lo, j] = X[i, j]
    return buf[: hi - lo]


@njit(cache=True)
def learn_dense_f(task, variant, C, epsilon, w, b, intercept, cols, X, y, sw):
    """`learn_dense` for a column-major (F-order) batch, BLOCK rows at a time."""
    n = X.shape[0]
    out = np.empty(n)
    buf = np.empty((BLOCK, X.shape[1]))
    for lo in range(0, n, BLOCK):
        hi = min(lo + BLOCK, n)
        out[lo:hi], b, bad = learn_dense(task, variant, C, epsilon, w, b, intercept, cols,
                                         _c_block(X, lo, hi, buf), y[lo:hi], sw[lo:hi])
        if bad >= 0:
            return out, b, lo + bad
    return out, b, -1


@njit(cache=True)
def margins_dense_f(w, b, cols, X):
    """`margins_dense` for a column-major (F-order) batch."""
    n = X.shape[0]
    out = np.empty(n)
    buf = np.empty((BLOCK, X.shape[1]))
    for lo in range(0, n, BLOCK):
        hi = min(lo + BLOCK, n)
        out[lo:hi] = margins_dense(w, b, cols, _c_block(X, lo, hi, buf))
    return out


@njit(cache=True)
def margins_csr(w, b, indptr, indices, data):
    """b + w . x for every row of a CSR batch (float64, rows)."""
    out = np.empty(indptr.shape[0] - 1)
    for i in range(out.shape[0]):
        lo, hi = indptr[i], indptr[i + 1]
        s, _ = dot_sq(w, indices[lo:hi], data[lo:hi])
        out[i] = b + s
    return out
