"""Numba kernels of the kernel Passive-Aggressive learner (no River imports here).

Shapes: `St` holds the support vectors as dense columns over the feature positions (positions x
capacity, float64), `sq` their squared norms and `kd` their self-kernels K(v, v) (capacity),
`A` their coefficients (capacity x label rows); `n_sv` of them are in use. An event is `idx`
(int64, m) and `val` (float64, m) with ||x||^2 = `qx`. A kernel is a code (LINEAR, POLY, RBF)
and its parameters (degree, gamma, coef0):

* LINEAR: x . v
* POLY: (coef0 + gamma x . v) ** degree
* RBF: exp(-gamma ||x - v||^2), with ||x - v||^2 = ||x||^2 + ||v||^2 - 2 x . v

The score of label r is f_r(x) = sum_i A[i, r] K(v_i, x) (Crammer et al. 2006, Section 7, in
the kernel form of the multi-prototype multiclass update).

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core._numba import step_size
from river_pa.multiclass._numba import most_violated

LINEAR, POLY, RBF = 0, 1, 2
PROJECTRON, BPA_S = 0, 1

# Below this fraction of K(x, x) left outside the span of the support vectors, x is projected
# rather than added: its Schur complement would make the inverse kernel matrix ill-conditioned.
SPAN_TOLERANCE = 1e-9


@njit(cache=True)
def kernel_value(kind, dot, qa, qb, degree, gamma, coef0):
    """K(a, b) from a . b and the squared norms ||a||^2, ||b||^2."""
    if kind == POLY:
        return (coef0 + gamma * dot) ** degree
    if kind == RBF:
        return np.exp(-gamma * max(qa + qb - 2.0 * dot, 0.0))
    return dot


@njit(cache=True)
def sq_norm(val):
    """||x||^2, summed in feature order."""
    q = 0.0
    for j in range(val.shape[0]):
        q += val[j] * val[j]
    return q


@njit(cache=True)
def kernel_row(kind, degree, gamma, coef0, St, sq, n_sv, idx, val, qx, out):
    """out[i] = K(v_i, x) for the n_sv support vectors, `St` holding them as columns
    (feature x support vector).

    Feature by feature, out[:n_sv] += St[p, :n_sv] * value, four features per pass over
    `out` (each added in turn, left to right): each v_i . x is still summed in the event's
    feature order from 0.0, the bits of a dot product per vector, and the loop over the
    support vectors is element-wise on contiguous rows, so it is vectorised. A dot product per
    vector, a reduction over a gather, is not: issue 18 measured 0.2x a numpy matrix-vector
    product per event. Features of value 0 are skipped: a sum begun at +0.0 is never -0.0,
    and adding a finite weight times +-0.0 to it changes no bit (81% of MNIST's pixels).

    """
    for i in range(n_sv):
        out[i] = 0.0
    nz_idx = np.empty(idx.shape[0], np.int64)
    nz_val = np.empty(idx.shape[0])
    m = 0
    for j in range(idx.shape[0]):
        if val[j] != 0.0:
            nz_idx[m] = idx[j]
            nz_val[m] = val[j]
            m += 1
    j = 0
    while j + 4 <= m:
        r0, r1, r2, r3 = St[nz_idx[j]], St[nz_idx[j + 1]], St[nz_idx[j + 2]], St[nz_idx[j + 3]]
        v0, v1, v2, v3 = nz_val[j], nz_val[j + 1], nz_val[j + 2], nz_val[j + 3]
        for i in range(n_sv):
            out[i] = (((out[i] + r0[i] * v0) + r1[i] * v1) + r2[i] * v2) + r3[i] * v3
        j += 4
    for j in range(j, m):
        row, v = St[nz_idx[j]], nz_val[j]
        for i in range(n_sv):
            out[i] += row[i] * v
    for i in range(n_sv):
        out[i] = kernel_value(kind, out[i], sq[i], qx, degree, gamma, coef0)


@njit(cache=True)
def label_scores(A, n_sv, n, k, out):
    """out[r] = sum_i A[i, r] k[i] for the n labels."""
    for r in range(n):
        out[r] = 0.0
    for i in range(n_sv):
        ki = k[i]
        for r in range(n):
            out[r] += A[i, r] * ki


@njit(cache=True)
def _write_support(St, sq, kd, A, slot, idx, val, qx, kxx):
    """Support vector `slot` <- x; its column of `St` must be zero (a slot never used, or
    cleared by the caller: a strided pass over every position). Values 0 leave it so."""
    for j in range(idx.shape[0]):
        if val[j] != 0.0:
            St[idx[j], slot] += val[j]
    sq[slot] = qx
    kd[slot] = kxx
    A[slot, :] = 0.0


@njit(cache=True)
def _cheapest_removal(A, kd, n_sv, n, k, kxx):
    """BPA-S: the support vector whose removal, after projecting its coefficients onto the new
    one, loses the least: ||a_i||^2 (K(v_i, v_i) - K(v_i, x)^2 / K(x, x))."""
    best = 0
    best_loss = np.inf
    for i in range(n_sv):
        a2 = 0.0
        for r in range(n):
            a2 += A[i, r] * A[i, r]
        loss = a2 * max(kd[i] - k[i] * k[i] / kxx, 0.0)
        if loss < best_loss:
            best, best_loss = i, loss
    return best


@njit(cache=True)
def _span_coordinates(Kinv, n_sv, k):
    """d = K^-1 k: the coordinates of the projection of Phi(x) onto the span of the n_sv
    support vectors (`Kinv` their inverse kernel matrix, `k` the kernel row of x)."""
    d = np.zeros(n_sv)
    for i in range(n_sv):
        acc = 0.0
        for j in range(n_sv):
            acc += Kinv[i, j] * k[j]
        d[i] = acc
    return d


@njit(cache=True)
def _extend_inverse(Kinv, n_sv, d, delta):
    """Grow K^-1 by the support vector of kernel row k, d = K^-1 k and Schur complement
    delta = K(x, x) - k . d (block inversion, O(n_sv^2))."""
    for i in range(n_sv):
        for j in range(n_sv):
            Kinv[i, j] += d[i] * d[j] / delta
        Kinv[i, n_sv] = -d[i] / delta
        Kinv[n_sv, i] = -d[i] / delta
    Kinv[n_sv, n_sv] = 1.0 / delta


@njit(cache=True)
def kernel_step(variant, c, kind, degree, gamma, coef0, St, sq, kd, A, Kinv, n_sv, budget,
                rule, idx, val, qx, k, s, n, y, m):
    """One kernel multiclass PA update given the event's kernel row `k` and scores `s`.

    The constraint is the most violated one (`m` a margin row, ones for plain multiclass);
    ||Phi(x, y) - Phi(x, q)||^2 = 2 K(x, x). A step adds x as a support vector with
    coefficients +tau for y and -tau for q. Returns (n_sv, tau). With `budget` > 0 and
    n_sv == budget:

    * PROJECTRON (Orabona, Keshet and Caputo 2009, the Projectron's projection with the
      budget as the only limit on growth): x is not added; the step is taken along the
      projection P Phi(x) of Phi(x) onto the span of the support vectors, coefficients
      d = K^-1 k, so the margin moves by 2 tau k . d = 2 tau ||P Phi(x)||^2 and tau is the PA
      step of that norm (the exact PA projection inside the span). `Kinv` (capacity x
      capacity) is kept by block inversion as vectors are added; an x already in the span
      (up to SPAN_TOLERANCE) is projected before the budget is full too.
    * BPA_S (Wang and Vucetic 2010): the support vector i of least `_cheapest_removal` is
      replaced by x, and its coefficients, scaled by K(v_i, x) / K(x, x), are added to x's
      (the projection of its contribution onto x).

    """
    q, loss = most_violated(s, n, y, m, 0)
    if q < 0:
        return n_sv, 0.0
    kxx = kernel_value(kind, qx, qx, qx, degree, gamma, coef0)
    if rule == PROJECTRON and budget > 0:
        d = _span_coordinates(Kinv, n_sv, k)
        kd_x = 0.0
        for i in range(n_sv):
            kd_x += k[i] * d[i]
        delta = kxx - kd_x
        if n_sv == budget or delta <= SPAN_TOLERANCE * kxx:
            tau = step_size(variant, loss, 2.0 * kd_x, c)
            if tau != 0.0:
                for i in range(n_sv):
                    A[i, y] += tau * d[i]
                    A[i, q] -= tau * d[i]
            return n_sv, tau
    tau = step_size(variant, loss, 2.0 * kxx, c)
    if tau == 0.0:
        return n_sv, 0.0
    if budget > 0 and n_sv == budget:
        slot = _cheapest_removal(A, kd, n_sv, n, k, kxx)
        kept = A[slot] * (k[slot] / kxx)
        St[:, slot] = 0.0
        _write_support(St, sq, kd, A, slot, idx, val, qx, kxx)
        A[slot, :] = kept
    else:
        if rule == PROJECTRON and budget > 0:
            _extend_inverse(Kinv, n_sv, d, delta)
        slot = n_sv
        n_sv += 1
        _write_support(St, sq, kd, A, slot, idx, val, qx, kxx)
    A[slot, y] += tau
    A[slot, q] -= tau
    return n_sv, tau


@njit(cache=True)
def kernel_scores_dense(kind, degree, gamma, coef0, St, sq, A, n_sv, n, cols, X):
    """Scores of every row of a dense batch (rows x n)."""
    out = np.empty((X.shape[0], n))
    k = np.empty(n_sv)
    for i in range(X.shape[0]):
        x = X[i]
        kernel_row(kind, degree, gamma, coef0, St, sq, n_sv, cols, x, sq_norm(x), k)
        label_scores(A, n_sv, n, k, out[i])
    return out
