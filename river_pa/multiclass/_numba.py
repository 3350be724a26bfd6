"""Numba kernels of the multi-prototype Passive-Aggressive learners (no River imports here).

Shapes: `W` is the float64 weight matrix (label rows x feature positions), `b` the intercepts
(one per label row), `ic` is 1.0 when the intercept is learned (a constant feature of value 1
counted in ||x||^2) and 0.0 otherwise. An event is `idx` (int64, m) and `val` (float64, m); a
dense batch is `X` (rows x cols) with `cols` (int64) the position of each column. `n` is the
number of label rows in use.

Multiclass and cost-sensitive updates share one step (Crammer et al. 2006, Sections 7-8):
`M[y, r]` is the margin sqrt(rho(y, r)) that label y must keep over label r (M[y, y] = 0; the
plain multiclass PA has M = 1 - I). The max-loss rule updates against
q = argmax_r (s_r - s_y + M[y, r]), the prediction-based rule against q = argmax_r s_r; the
loss is s_q - s_y + M[y, q] and the step w_y += tau x, w_q -= tau x with
||Phi(x, y) - Phi(x, q)||^2 = 2 (||x||^2 + ic).

The multilabel updates work on label sets (`rel[r]` is 1 for a relevant label, 0 for an
irrelevant one) with a threshold of score 0 between them: the ranking rule enforces the most
violated pair (see `multilabel_pair`), the threshold rule every label's side of the threshold at
once (see `multilabel_cut_step`).

Every batch kernel runs its rows through the same row function as the per-event path, in the
same order, so `learn_many` gives bit-for-bit the weights of a `learn_one` loop.

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core._numba import step_size

MAX_LOSS, PREDICTION_BASED = 0, 1
RANKING, THRESHOLD = 0, 1


@njit(cache=True)
def scores(W, b, n, idx, val, out):
    """out[r] = b[r] + W[r] . x for the first n label rows; returns ||x||^2 (intercept excluded)."""
    q = 0.0
    for j in range(idx.shape[0]):
        q += val[j] * val[j]
    for r in range(n):
        s = 0.0
        for j in range(idx.shape[0]):
            s += W[r, idx[j]] * val[j]
        out[r] = b[r] + s
    return q


@njit(cache=True)
def argmax(s, n):
    """The first row of largest s[r], r < n (-1 when n = 0)."""
    best = -1
    for r in range(n):
        if best < 0 or s[r] > s[best]:
            best = r
    return best


@njit(cache=True)
def most_violated(s, n, y, m, rule):
    """(q, loss) of the constraint to enforce; q = -1 when there is nothing to update.

    `m` is the margin row M[y, :] (float64, n).

    """
    if rule == PREDICTION_BASED:
        q = argmax(s, n)
    else:
        q = -1
        for r in range(n):
            if r != y and (q < 0 or s[r] + m[r] > s[q] + m[q]):
                q = r
    if q < 0 or q == y:
        return -1, 0.0
    return q, s[q] - s[y] + m[q]


@njit(cache=True)
def shift(W, b, ic, idx, val, r, tau):
    """w_r += tau x (intercept by tau ic)."""
    for j in range(idx.shape[0]):
        W[r, idx[j]] += tau * val[j]
    b[r] += tau * ic


@njit(cache=True)
def move(W, b, ic, idx, val, r, s, tau):
    """w_r += tau x, w_s -= tau x (intercepts by tau ic)."""
    shift(W, b, ic, idx, val, r, tau)
    shift(W, b, ic, idx, val, s, -tau)


@njit(cache=True)
def multiclass_step(variant, c, W, b, ic, idx, val, sq, s, n, y, m, rule):
    """One multiclass / cost-sensitive PA update given the event's scores; returns tau."""
    q, loss = most_violated(s, n, y, m, rule)
    if q < 0:
        return 0.0
    tau = step_size(variant, loss, 2.0 * (sq + ic), c)
    if tau != 0.0:
        move(W, b, ic, idx, val, y, q, tau)
    return tau


@njit(cache=True)
def multiclass_dense(variant, C, W, b, ic, cols, X, y, n_at, M, rule, sw):
    """Run the rows of a dense batch through `multiclass_step`, in order.

    `y` (int64, rows) are label rows, `n_at[i]` the label rows known at row i, `M` the margin
    matrix.

    """
    s = np.empty(W.shape[0])
    for i in range(X.shape[0]):
        n = n_at[i]
        sq = scores(W, b, n, cols, X[i], s)
        if sw[i] > 0.0:
            multiclass_step(variant, C * sw[i], W, b, ic, cols, X[i], sq, s, n, y[i], M[y[i]],
                            rule)


@njit(cache=True)
def scores_dense(W, b, n, cols, X):
    """Scores of every row of a dense batch (rows x n)."""
    out = np.empty((X.shape[0], n))
    for i in range(X.shape[0]):
        scores(W, b, n, cols, X[i], out[i])
    return out


@njit(cache=True)
def multilabel_pair(s, n, rel):
    """(r, q, loss) of the most violated ranking constraint s_r - s_q >= 1.

    A label index of -1 stands for the threshold, whose score is fixed at 0: every relevant
    label must score >= 1, every irrelevant one <= -1, and relevant labels 1 above irrelevant
    ones. With lo the lowest-scoring relevant label and hi the highest-scoring irrelevant one,
    the candidates are (lo, hi), (lo, threshold) and (threshold, hi); the one of largest
    s_q - s_r wins (in that order on ties). Returns (-1, -1, 0.0) when there is no label.

    """
    lo = -1
    hi = -1
    for k in range(n):
        if rel[k] == 1:
            if lo < 0 or s[k] < s[lo]:
                lo = k
        elif hi < 0 or s[k] > s[hi]:
            hi = k
    if lo < 0 and hi < 0:
        return -1, -1, 0.0
    best = -np.inf
    r = q = -1
    if lo >= 0 and hi >= 0:
        r, q, best = lo, hi, s[hi] - s[lo]
    if lo >= 0 and -s[lo] > best:
        r, q, best = lo, -1, -s[lo]
    if hi >= 0 and s[hi] > best:
        r, q, best = -1, hi, s[hi]
    return r, q, 1.0 + best


@njit(cache=True)
def multilabel_step(variant, c, W, b, ic, idx, val, sq, s, n, rel):
    """One multilabel ranking PA update given the event's scores; returns tau.

    ||Phi(x, r) - Phi(x, q)||^2 is 2 (||x||^2 + ic) for two labels and ||x||^2 + ic against
    the threshold (whose prototype is fixed at 0).

    """
    r, q, loss = multilabel_pair(s, n, rel)
    moving = (r >= 0) + (q >= 0)
    if moving == 0:
        return 0.0
    tau = step_size(variant, loss, moving * (sq + ic), c)
    if tau != 0.0:
        if r >= 0:
            shift(W, b, ic, idx, val, r, tau)
        if q >= 0:
            shift(W, b, ic, idx, val, q, -tau)
    return tau


@njit(cache=True)
def multilabel_cut_step(variant, c, W, b, ic, idx, val, sq, s, n, rel):
    """One PA step on the summed hinge loss of the n label-vs-threshold constraints; returns tau.

    Label r must score s_r >= 1 if relevant and <= -1 if not: l_r = max(0, 1 - z_r s_r) with
    z_r = +-1. The loss of the event is L = sum_r l_r; its gradient has one row z_r x per
    violated label, so ||grad||^2 = k (||x||^2 + ic) for k violated labels, and the PA step
    (Crammer et al. 2006, eq. 7 with this loss) moves each violated row by z_r tau x.

    """
    loss = 0.0
    k = 0
    for r in range(n):
        lr = 1.0 - (s[r] if rel[r] else -s[r])
        if lr > 0.0:
            loss += lr
            k += 1
    if k == 0:
        return 0.0
    tau = step_size(variant, loss, k * (sq + ic), c)
    if tau != 0.0:
        for r in range(n):
            z = 1.0 if rel[r] else -1.0
            if 1.0 - z * s[r] > 0.0:
                shift(W, b, ic, idx, val, r, z * tau)
    return tau


@njit(cache=True)
def multilabel_update(rule, variant, c, W, b, ic, idx, val, sq, s, n, rel):
    """`multilabel_cut_step` for THRESHOLD, `multilabel_step` for RANKING; returns tau."""
    if rule == THRESHOLD:
        return multilabel_cut_step(variant, c, W, b, ic, idx, val, sq, s, n, rel)
    return multilabel_step(variant, c, W, b, ic, idx, val, sq, s, n, rel)


@njit(cache=True)
def multilabel_dense(rule, variant, C, W, b, ic, cols, X, R, n, sw):
    """Run the rows of a dense batch through `multilabel_update`; `R` is rows x label rows."""
    s = np.empty(n)
    for i in range(X.shape[0]):
        sq = scores(W, b, n, cols, X[i], s)
        if sw[i] > 0.0:
            multilabel_update(rule, variant, C * sw[i], W, b, ic, cols, X[i], sq, s, n, R[i])
