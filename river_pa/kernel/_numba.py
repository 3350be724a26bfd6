"""Numba kernels of the kernel Passive-Aggressive learner (no River imports here).

Shapes: `S` holds the support vectors as dense rows over the feature positions (capacity x
positions, float64), `sq` their squared norms and `kd` their self-kernels K(v, v) (capacity),
`A` their coefficients (capacity x label rows); `n_sv` rows are in use. An event is `idx`
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
def kernel_row(kind, degree, gamma, coef0, S, sq, n_sv, idx, val, qx, out):
    """out[i] = K(v_i, x) for the n_sv support vectors."""
    for i in range(n_sv):
        d = 0.0
        for j in range(idx.shape[0]):
            d += S[i, idx[j]] * val[j]
        out[i] = kernel_value(kind, d, sq[i], qx, degree, gamma, coef0)


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
def _write_support(S, sq, kd, A, slot, idx, val, qx, kxx):
    S[slot, :] = 0.0
    for j in range(idx.shape[0]):
        S[slot, idx[j]] += val[j]
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
def kernel_step(variant, c, kind, degree, gamma, coef0, S, sq, kd, A, n_sv, budget,
                idx, val, qx, k, s, n, y, m):
    """One kernel multiclass PA update given the event's kernel row `k` and scores `s`.

    The constraint is the most violated one (`m` a margin row, ones for plain multiclass);
    ||Phi(x, y) - Phi(x, q)||^2 = 2 K(x, x). A step adds x as a support vector with
    coefficients +tau for y and -tau for q. With `budget` > 0 and n_sv == budget, BPA-S
    (Wang and Vucetic 2010) makes room: the support vector i of least
    `_cheapest_removal` is replaced by x, and its coefficients, scaled by K(v_i, x) / K(x, x),
    are added to x's (the projection of its contribution onto x). Returns (n_sv, tau).

    """
    q, loss = most_violated(s, n, y, m, 0)
    if q < 0:
        return n_sv, 0.0
    kxx = kernel_value(kind, qx, qx, qx, degree, gamma, coef0)
    tau = step_size(variant, loss, 2.0 * kxx, c)
    if tau == 0.0:
        return n_sv, 0.0
    if budget > 0 and n_sv == budget:
        slot = _cheapest_removal(A, kd, n_sv, n, k, kxx)
        kept = A[slot] * (k[slot] / kxx)
        _write_support(S, sq, kd, A, slot, idx, val, qx, kxx)
        A[slot, :] = kept
    else:
        slot = n_sv
        n_sv += 1
        _write_support(S, sq, kd, A, slot, idx, val, qx, kxx)
    A[slot, y] += tau
    A[slot, q] -= tau
    return n_sv, tau


@njit(cache=True)
def kernel_scores_dense(kind, degree, gamma, coef0, S, sq, A, n_sv, n, cols, X):
    """Scores of every row of a dense batch (rows x n)."""
    out = np.empty((X.shape[0], n))
    k = np.empty(n_sv)
    for i in range(X.shape[0]):
        x = X[i]
        kernel_row(kind, degree, gamma, coef0, S, sq, n_sv, cols, x, sq_norm(x), k)
        label_scores(A, n_sv, n, k, out[i])
    return out
