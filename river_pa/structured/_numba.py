"""Numba kernels of the structured Passive-Aggressive sequence tagger (no River imports here).

Shapes (k tags, m tokens, F feature positions):

* `E` float64 (F, k): emission weights, E[p, t] is the weight of feature p crossed with tag t.
* `T` float64 (k + 1, k): T[0, t] is the weight of starting with tag t, T[1 + a, b] of the
  transition from tag a to tag b.
* a sentence is CSR: `indptr` int64 (m + 1), `idx` int64 (nnz) feature positions, `val`
  float64 (nnz) feature values; token i owns idx[indptr[i]:indptr[i + 1]].
* `S` float64 (m, k): emission scores, S[i, t] = sum_f val_f E[p_f, t] over token i.
* tag sequences are int64 (m) arrays of tag indices.

w . Phi(x, y) = T[0, y_0] + sum_i S[i, y_i] + sum_{i >= 1} T[1 + y_{i-1}, y_i]
(first-order Markov features: initial tag, emission, transition).

Source: Crammer et al. (2006), Online Passive-Aggressive Algorithms, JMLR 7, Section 9.

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core._numba import step_size


@njit(cache=True)
def emission_scores(E, U, inv_n, indptr, idx, val):
    """S (m, k) with S[i, t] = sum over token i's features of val * (E - U inv_n)[p, t].

    The averaged weights E - U / n without forming them; pass U = E and inv_n = 0 for E.

    """
    m = indptr.shape[0] - 1
    k = E.shape[1]
    S = np.zeros((m, k))
    for i in range(m):
        for j in range(indptr[i], indptr[i + 1]):
            p, v = idx[j], val[j]
            for t in range(k):
                S[i, t] += v * (E[p, t] - U[p, t] * inv_n)
    return S


@njit(cache=True)
def viterbi(S, T):
    """The highest-scoring tag sequence (int64, m) and its score, in O(m k^2).

    Ties go to the lowest tag index.

    """
    m, k = S.shape
    delta = np.empty((m, k))
    back = np.zeros((m, k), dtype=np.int64)
    for b in range(k):
        delta[0, b] = T[0, b] + S[0, b]
    for i in range(1, m):
        for b in range(k):
            best = -np.inf
            arg = 0
            for a in range(k):
                s = delta[i - 1, a] + T[1 + a, b]
                if s > best:
                    best = s
                    arg = a
            delta[i, b] = best + S[i, b]
            back[i, b] = arg
    path = np.empty(m, dtype=np.int64)
    last = 0
    for b in range(1, k):
        if delta[m - 1, b] > delta[m - 1, last]:
            last = b
    score = delta[m - 1, last]
    path[m - 1] = last
    for i in range(m - 1, 0, -1):
        path[i - 1] = back[i, path[i]]
    return path, score


@njit(cache=True)
def sequence_score(S, T, y):
    """w . Phi(x, y) from the emission scores S and the transitions T."""
    score = T[0, y[0]] + S[0, y[0]]
    for i in range(1, y.shape[0]):
        score += T[1 + y[i - 1], y[i]] + S[i, y[i]]
    return score


@njit(cache=True)
def _emission_sq_norm(k, indptr, idx, val, y, z):
    """||emission part of Phi(x, y) - Phi(x, z)||^2, merging repeated (feature, tag) pairs."""
    n = 0
    for i in range(y.shape[0]):
        if y[i] != z[i]:
            n += 2 * (indptr[i + 1] - indptr[i])
    keys = np.empty(n, dtype=np.int64)
    vals = np.empty(n)
    n = 0
    for i in range(y.shape[0]):
        if y[i] != z[i]:
            for j in range(indptr[i], indptr[i + 1]):
                keys[n], vals[n] = idx[j] * k + y[i], val[j]
                keys[n + 1], vals[n + 1] = idx[j] * k + z[i], -val[j]
                n += 2
    order = np.argsort(keys)
    total = 0.0
    run = 0.0
    for r in range(n):
        run += vals[order[r]]
        if r == n - 1 or keys[order[r + 1]] != keys[order[r]]:
            total += run * run
            run = 0.0
    return total


@njit(cache=True)
def _transition_sq_norm(k, y, z):
    """||transition and initial part of Phi(x, y) - Phi(x, z)||^2."""
    D = np.zeros((k + 1, k))
    D[0, y[0]] += 1.0
    D[0, z[0]] -= 1.0
    for i in range(1, y.shape[0]):
        D[1 + y[i - 1], y[i]] += 1.0
        D[1 + z[i - 1], z[i]] -= 1.0
    return (D * D).sum()


@njit(cache=True)
def _add(E, T, indptr, idx, val, y, z, step):
    """E, T += step * (Phi(x, y) - Phi(x, z)), skipping the parts that cancel exactly."""
    for i in range(y.shape[0]):
        if y[i] != z[i]:
            for j in range(indptr[i], indptr[i + 1]):
                E[idx[j], y[i]] += step * val[j]
                E[idx[j], z[i]] -= step * val[j]
        py = 0 if i == 0 else 1 + y[i - 1]
        pz = 0 if i == 0 else 1 + z[i - 1]
        if py != pz or y[i] != z[i]:
            T[py, y[i]] += step
            T[pz, z[i]] -= step


@njit(cache=True)
def learn(variant, c, E, T, UE, UT, average, n_before, indptr, idx, val, y):
    """One prediction-based PA step on a sentence with gold tags `y`.

    Decodes z = argmax w . Phi(x, .) (Viterbi), rho = number of tags z gets wrong, the loss
    l = w . Phi(x, z) - w . Phi(x, y) + sqrt(rho) and the step
    w += tau (Phi(x, y) - Phi(x, z)) with tau from `step_size` on ||Phi(x, y) - Phi(x, z)||^2.
    With `average`, UE, UT += n_before * tau * (Phi(x, y) - Phi(x, z)) (the lazy-averaging
    sums: the average of the weights after each of n sentences is w - U / n).

    Returns (z, rho, loss, tau).

    """
    k = E.shape[1]
    S = emission_scores(E, E, 0.0, indptr, idx, val)
    z, z_score = viterbi(S, T)
    rho = 0
    for i in range(y.shape[0]):
        if y[i] != z[i]:
            rho += 1
    if rho == 0:
        return z, 0, 0.0, 0.0
    loss = z_score - sequence_score(S, T, y) + np.sqrt(rho)
    sq = _emission_sq_norm(k, indptr, idx, val, y, z) + _transition_sq_norm(k, y, z)
    tau = step_size(variant, loss, sq, c)
    if tau > 0.0:
        _add(E, T, indptr, idx, val, y, z, tau)
        if average and n_before > 0:
            _add(UE, UT, indptr, idx, val, y, z, tau * n_before)
    return z, rho, loss, tau
