"""Numba kernels of the parameter-free learners (no River imports here).

RescaledExp (Cutkosky and Boahen 2016, Algorithm 1; re-centred Algorithm 2, Appendix C.3)
------------------------------------------------------------------------------------------
Coordinate-wise state is a float64 array `st` of shape (positions, N_STATE), one row per
coordinate, with the columns `L, G, Q, M, W, W_STAR, W_PREV`: the epoch's gradient bound L_t
(0 until the first non-zero gradient), the epoch sums g_{t*:t} and ||g||^2_{t*:t}, M_t, the
weight to play next, the centre w_star (0 in Algorithm 1) and the weight played one round
earlier (for Algorithm 2's w_star <- w_{t-1}). The full-vector (dimension-free) variant keeps
the vectors G, W_STAR, W, W_PREV as the columns of the same array and the scalars L, Q, M in a
float64 array `sc` of length 3.

Overflow guard: the weight is w_star - sign(G) (exp(eta |G|) - 1). Within an epoch |g| <= 2L and
M_t + ||g||^2 >= |G| L, so eta |G| <= sqrt(|G| / L) / 2 <= sqrt(n / 2) after n rounds of the
epoch (the exp(sqrt(T/2)) of Lemma 3): it passes 709 (float64's largest exponent) only after
about a million same-sign gradients of the largest size, and the adversary of Theorem 1 drives
it there. The exponent is therefore capped at EXP_CAP = log(sqrt(DBL_MAX)) ~ 354.9: a capped
weight is at most 1.3e154, so w x stays finite for |x| < 1.3e154 and w^2 stays finite. Below the
cap (every realistic stream) the kernels compute the paper's expression exactly, with expm1.

Scale-invariant learners (Kotlowski 2017, coordinate-wise algorithm (5) and full algorithm)
------------------------------------------------------------------------------------------
Coordinate-wise: `s2` and `h` (float64, positions). Full: `S` (d x d), `P` (the pseudo-inverse
S^+, d x d), `N` (the orthogonal projector I - S S^+ onto the null space of S, d x d), `h` (d)
and Gamma. A sparse event is `idx` (int64, n), `val` (float64, n). The same exponent cap applies
to the unitless exponents of both algorithms, so scale invariance is kept. An event adds a
direction when ||N x||^2 > max(RANK_TOL ||x||^2, floor), the floor (n eps trace(S), from the
caller) being numpy's pseudo-inverse cut-off with trace(S) >= lambda_max.

"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

L, G, Q, M, W, W_STAR, W_PREV = 0, 1, 2, 3, 4, 5, 6
N_STATE = 7
SC_L, SC_Q, SC_M = 0, 1, 2

# Re-centring rules of Algorithm 2 (Appendix C.3): none (Algorithm 1), w_t, w_{t-1}.
CENTER_NONE, CENTER_LAST, CENTER_BEFORE_LAST = 0, 1, 2

K = math.sqrt(2.0)
EXP_CAP = 0.5 * math.log(np.finfo(np.float64).max)
RANK_TOL = 1e-15
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny  # the smallest normal float64, ~2.2e-308
# Largest |feature value| accepted: x^2 < 1e300, so sums of up to 1e8 squares (features x
# events at the limit) stay below float64's 1.8e308.
MAX_ABS_VALUE = 1e150
UNIT_SCALE_MIN = 2.0**-64  # see `unit_scale`


@njit(cache=True)
def max_abs(val: np.ndarray) -> float:
    """max_j |val[j]| (0 for none)."""
    m = 0.0
    for j in range(val.shape[0]):
        m = max(m, abs(val[j]))
    return m


@njit(cache=True)
def capped_expm1(z: float) -> float:
    """exp(min(z, EXP_CAP)) - 1."""
    return math.expm1(min(z, EXP_CAP))


@njit(cache=True)
def exponent_rescaledexp(L_t: float, G_norm: float, Q_t: float, M_prev: float):
    """(M_t, eta_t |G|) of Algorithm 1: M_t = max(M_{t-1}, |G| / p - Q) with 1/p = L_t, and
    eta_t = 1 / (k sqrt(2 (M_t + Q))) with k = sqrt(2).

    Since M_t + Q >= |G| L_t, eta_t |G| <= sqrt(|G| / L_t) / 2 (equal on an epoch's first
    round). Gradients below ~1e-154 make M_t + Q underflow (to 0: a division by zero, or to a
    subnormal that has lost its digits); the exponent is then that bound, computed from |G| / L_t,
    which does not underflow: the first step of an epoch stays exactly Algorithm 1's at any scale.

    """
    M_t = max(M_prev, G_norm * L_t - Q_t)
    s = M_t + Q_t
    if s >= TINY:
        return M_t, G_norm / (K * math.sqrt(2.0 * s))
    return M_t, 0.5 * math.sqrt(G_norm / L_t)


@njit(cache=True)
def rescaledexp_1d(st: np.ndarray, i: int, g: float, center: int) -> None:
    """One round of a 1-D RescaledExp instance (row `i` of `st`) on the gradient `g`.

    A zero gradient leaves the instance untouched (Section 3: w stays put until a non-constant
    loss; Appendix C.2 runs one instance per coordinate).

    """
    if g == 0.0:
        return
    ag = abs(g)
    if st[i, L] == 0.0:
        st[i, L] = ag
    Gs = st[i, G] + g
    Qs = st[i, Q] + g * g
    Ms, z = exponent_rescaledexp(st[i, L], abs(Gs), Qs, st[i, M])
    played = st[i, W]
    if Gs > 0.0:
        nxt = st[i, W_STAR] - capped_expm1(z)
    elif Gs < 0.0:
        nxt = st[i, W_STAR] + capped_expm1(z)
    else:
        nxt = st[i, W_STAR]
    if ag > 2.0 * st[i, L]:
        st[i, L] = ag
        Gs = Qs = Ms = 0.0
        if center == CENTER_LAST:
            st[i, W_STAR] = played
        elif center == CENTER_BEFORE_LAST:
            st[i, W_STAR] = st[i, W_PREV]
        nxt = st[i, W_STAR]
    st[i, G] = Gs
    st[i, Q] = Qs
    st[i, M] = Ms
    st[i, W_PREV] = played
    st[i, W] = nxt


@njit(cache=True)
def rescaledexp_coordinates(st, idx, val, gm, bias, center):
    """Coordinate-wise RescaledExp (Appendix C.2) on the gradient gm * x.

    The gradient is gm * val[j] at position idx[j] and gm at the row `bias` (the constant
    feature of a linear model; -1 for none). An optimizer passes its gradient as `val` with
    gm = 1. Positions must be distinct.

    """
    if gm == 0.0:
        return
    for j in range(idx.shape[0]):
        rescaledexp_1d(st, idx[j], gm * val[j], center)
    if bias >= 0:
        rescaledexp_1d(st, bias, gm, center)


@njit(cache=True)
def _rescaled_norm(v: np.ndarray) -> float:
    """||v|| without underflow: max |v_i| sqrt(sum (v_i / max |v_i|)^2)."""
    m = 0.0
    for x in v:
        m = max(m, abs(x))
    if m == 0.0:
        return 0.0
    s = 0.0
    for x in v:
        s += (x / m) * (x / m)
    return m * math.sqrt(s)


@njit(cache=True)
def _grad_norm_tiny(idx, val, gm, bias):
    """||g|| of the gradient gm * x (+ gm at `bias`) when its squares underflow."""
    g = gm * val
    return _rescaled_norm(np.append(g, gm) if bias >= 0 else g)


@njit(cache=True)
def _column_norm_tiny(st, col):
    """||st[:, col]|| when its squares underflow."""
    return _rescaled_norm(st[:, col].copy())


@njit(cache=True)
def rescaledexp_full(st, sc, idx, val, gm, bias, center):
    """Full-vector (dimension-free) RescaledExp: Algorithm 1 with Euclidean norms.

    The gradient is as in `rescaledexp_coordinates` (0 on every other row). Every row of `st` is
    rewritten, since the step w = w_star - G / ||G|| (exp(eta ||G||) - 1) rescales the whole
    direction. A zero gradient leaves the state untouched.

    """
    gsq = 0.0
    for j in range(idx.shape[0]):
        gj = gm * val[j]
        st[idx[j], G] += gj
        gsq += gj * gj
    if bias >= 0:
        st[bias, G] += gm
        gsq += gm * gm
    ag = math.sqrt(gsq) if gsq >= TINY else _grad_norm_tiny(idx, val, gm, bias)
    if ag == 0.0:
        return
    if sc[SC_L] == 0.0:
        sc[SC_L] = ag
    n = st.shape[0]
    gn2 = 0.0
    for i in range(n):
        gn2 += st[i, G] * st[i, G]
    gnorm = math.sqrt(gn2) if gn2 >= TINY else _column_norm_tiny(st, G)
    Qs = sc[SC_Q] + gsq
    Ms, z = exponent_rescaledexp(sc[SC_L], gnorm, Qs, sc[SC_M])
    scale = capped_expm1(z) / gnorm if gnorm > 0.0 else 0.0
    restart = ag > 2.0 * sc[SC_L]
    for i in range(n):
        played = st[i, W]
        nxt = st[i, W_STAR] - scale * st[i, G]
        if restart:
            if center == CENTER_LAST:
                st[i, W_STAR] = played
            elif center == CENTER_BEFORE_LAST:
                st[i, W_STAR] = st[i, W_PREV]
            nxt = st[i, W_STAR]
            st[i, G] = 0.0
        st[i, W_PREV] = played
        st[i, W] = nxt
    if restart:
        sc[SC_L] = ag
        Qs = Ms = 0.0
    sc[SC_Q] = Qs
    sc[SC_M] = Ms


@njit(cache=True)
def rescaledexp_margin(st, idx, val, bias):
    """y_hat = sum_j W[idx[j]] val[j] (+ W[bias] for the constant feature, bias >= 0); NaN if
    some |val[j]| >= MAX_ABS_VALUE."""
    s = 0.0
    for j in range(idx.shape[0]):
        if not abs(val[j]) < MAX_ABS_VALUE:
            return np.nan
        s += st[idx[j], W] * val[j]
    if bias >= 0:
        s += st[bias, W]
    return s


# -- scale-invariant, coordinate-wise ---------------------------------------------------------


@njit(cache=True)
def si_coordinate_margin(s2, h, idx, val, bias, t, d, alpha):
    """y_hat = sum_i w_i x_i of the coordinate-wise algorithm at round t with d coordinates.

    s_i^2 includes x_{t,i}^2 (the algorithm reads x_t first) without being stored:
    eta_i = exp((h_i^2 + x_i^2) / (2 alpha s_i^2)) / (alpha t d), w_i = eta_i h_i / s_i^2.
    Each term w_i x_i is formed as exp(E) (h_i x_i / s_i^2) / (alpha t d), which stays finite
    under the exponent cap because |h_i x_i| / s_i^2 <= sqrt(t) for |g| <= 1.
    `bias` >= 0 is the row of the constant feature (value 1); -1 for none. NaN if some
    |val[j]| >= MAX_ABS_VALUE.

    """
    atd = alpha * t * d
    y = 0.0
    for j in range(idx.shape[0] + 1):
        if j < idx.shape[0]:
            i = idx[j]
            x = val[j]
            if not abs(x) < MAX_ABS_VALUE:
                return np.nan
        elif bias >= 0:
            i = bias
            x = 1.0
        else:
            break
        s = s2[i] + x * x
        if s > 0.0 and h[i] != 0.0:
            e = min((h[i] * h[i] + x * x) / (2.0 * alpha * s), EXP_CAP)
            y += math.exp(e) * (h[i] * x / s) / atd
    return y


@njit(cache=True)
def si_coordinate_update(s2, h, idx, val, bias, g):
    """Commit round t: s_i^2 += x_i^2 and h_i -= g x_i."""
    for j in range(idx.shape[0]):
        x = val[j]
        s2[idx[j]] += x * x
        h[idx[j]] -= g * x
    if bias >= 0:
        s2[bias] += 1.0
        h[bias] -= g


@njit(cache=True)
def si_coordinate_weights(s2, h, t, d, alpha):
    """The weights w_i = eta_i h_i / s_i^2 the algorithm would play for x_{t+1,i} = 0."""
    w = np.zeros(s2.shape[0])
    for i in range(s2.shape[0]):
        if s2[i] > 0.0 and h[i] != 0.0:
            e = min(h[i] * h[i] / (2.0 * alpha * s2[i]), EXP_CAP)
            w[i] = math.exp(e) / (alpha * (t + 1) * d) * h[i] / s2[i]
    return w


# -- scale-invariant, full ----------------------------------------------------------------------


@njit(cache=True)
def _matvec_sparse(A, idx, val, out):
    """out = A x for a sparse x (A symmetric: columns read as rows)."""
    out[:] = 0.0
    for j in range(idx.shape[0]):
        row = A[idx[j]]
        v = val[j]
        for i in range(out.shape[0]):
            out[i] += row[i] * v


@njit(cache=True)
def si_full_round(P, N, h, scratch, n, idx, val, extra_sq, trace, fresh, ph_ok, gamma, alpha):
    """The quantities of S_t^+ = (S_{t-1} + x x^T)^+ needed at round t, without forming it.

    On the first n coordinates of the state (P = S^+, N = I - S S^+, h; arrays of the
    learner's capacity), fills scratch[0] with k = P x, scratch[1] with r = N x (the part of x
    outside the range of S_{t-1}) and, unless `ph_ok` says it holds it already (see
    `si_full_commit`), scratch[2] with P h; returns (new, y_hat, h^T S_t^+ h, x^T S_t^+ x),
    where `new` says whether x adds a direction (||r||^2 > RANK_TOL ||x||^2 and above the
    floor n eps (trace(S) + ||x||^2), `trace` being trace(S)) and y_hat = eta x^T S_t^+ h with
    eta = `si_full_eta`(h^T S_t^+ h, gamma, alpha). `extra_sq` is the squared norm of the
    part of x on coordinates the model has never seen (prediction only): those are fresh axes
    of the null space, with P = 0, N = I and h = 0 there, so they only add to ||r||^2. With
    beta = 1 + x^T P x:

    * x in range(S) (Sherman-Morrison): S_t^+ = P - k k^T / beta;
    * otherwise (Meyer's rank-one update of a pseudo-inverse, symmetric case):
      S_t^+ = P - (k r^T + r k^T) / ||r||^2 + beta r r^T / ||r||^4, so that x^T S_t^+ h =
      r.h / ||r||^2, x^T S_t^+ x = 1 and h^T S_t^+ h = h.Ph - 2 (k.h)(r.h)/||r||^2
      + beta (r.h)^2 / ||r||^4; since h is in range(S_{t-1}), r.h = 0: the prediction is 0 and
      h^T S_t^+ h = h^T P h.

    O(n nnz(x)), plus n^2 for P h when `ph_ok` is false. When trace(N) < 1.5 (N = 0 on every
    coordinate the model has, the sink aside: full rank, so only unseen coordinates can add a
    direction) r = 0 without the product N x. `fresh` says x is non-zero on a coordinate no
    event has been non-zero on (a fresh axis of the null space): x then adds a direction
    exactly, whatever ||r||^2 / ||x||^2 (which depends on the features' units) says, unless
    ||r||^2 underflows (1 / ||r||^2 must stay finite for the update). All NaN: refused.

    """
    k = scratch[0, :n]
    r = scratch[1, :n]
    Ph = scratch[2, :n]
    _matvec_sparse(P, idx, val, k)
    null_dim = 0.0
    for i in range(n):
        null_dim += N[i, i]
    if null_dim < 1.5:
        r[:] = 0.0
    else:
        _matvec_sparse(N, idx, val, r)
    if not ph_ok:
        for i in range(n):
            Ph[i] = _row_dot(P[i], h, n)
    xk = 0.0
    xx = extra_sq
    for j in range(idx.shape[0]):
        xk += val[j] * k[idx[j]]
        xx += val[j] * val[j]
    rr = extra_sq
    kh = 0.0
    hPh = 0.0
    for i in range(n):
        rr += r[i] * r[i]
        kh += k[i] * h[i]
        hPh += h[i] * Ph[i]
    beta = 1.0 + xk
    if (fresh and rr >= TINY) or (rr > RANK_TOL * xx and rr > n * EPS * (trace + xx)):
        # h = -sum g_q x_q lies in range(S_{t-1}), orthogonal to r: r.h = 0 exactly (what is
        # computed is rounding noise, which would break the invariance of a zero prediction).
        c = 1.0 / rr  # beta / ||r||^2, formed as `si_full_commit` forms it
        k_max = 0.0
        for j in range(idx.shape[0]):
            c += val[j] * (k[idx[j]] / rr)
        for i in range(n):
            k_max = max(k_max, abs(k[i]))
        # the update adds c r_i r_j / ||r||^2 - (k_i r_j + r_i k_j) / ||r||^2 to P_ij, at most
        # |c| + 2 max|k| / ||r|| (|r_i r_j| <= ||r||^2): S_t^+ would leave float64 beyond it
        if not math.isfinite(abs(c) + 2.0 * (k_max / math.sqrt(rr))):
            return False, np.nan, np.nan, np.nan  # refused, as below
        return True, si_full_eta(hPh, gamma, alpha) * 0.0, hPh, 1.0
    if not beta > 0.0:  # exactly beta >= 1 (P is positive semi-definite); rounding broke it
        return False, np.nan, np.nan, np.nan
    # x^T S_t^+ h = kh - xk kh / beta = kh / beta (beta = 1 + xk): the short form cannot
    # overflow in xk kh (as it did for |x| = 1e100 on a learned h)
    hPh_t = hPh - kh * (kh / beta)
    return False, si_full_eta(hPh_t, gamma, alpha) * (kh / beta), hPh_t, xk / beta


@njit(cache=True)
def si_full_commit(S, P, N, h, D, scratch, n, idx, raw, val, new, g):
    """End round t on the first n coordinates, from the k = scratch[0], r = scratch[1] that
    `si_full_round` filled for this event (positions `idx`, values `raw` in the features'
    units, `val` in the learner's): fix the units D of coordinates non-zero for the first
    time (`si_full_fix_scales`), S <- S + x x^T (its lower triangle only: `np.linalg.eigh`
    reads no other), h <- h - g x, P <- S_t^+ (and N <- I - S_t S_t^+ when x added a
    direction), in O(n^2), and scratch[2] <- P h for the next round, each row of P dotted
    with h right after its update (one pass over P instead of a second one next round).
    Returns ||x||^2, by which trace(S) grows."""
    si_full_fix_scales(D, idx, raw)
    xx = 0.0
    for a in range(idx.shape[0]):
        ia = idx[a]
        Sa = S[ia]
        va = val[a]
        xx += va * va
        for b in range(idx.shape[0]):
            if idx[b] <= ia:
                Sa[idx[b]] += va * val[b]
    for j in range(idx.shape[0]):
        h[idx[j]] -= g * val[j]
    k = scratch[0, :n]
    r = scratch[1, :n]
    Ph = scratch[2, :n]
    if new:
        rr = 0.0
        for i in range(n):
            rr += r[i] * r[i]
        # scaled by 1/||r||^2 before any product: with |x| near 1e149 on a tiny S, beta, k r^T
        # and ||r||^4 each leave float64 although S_t^+ is finite (P was NaN after {a: 1e-10},
        # then {a: 1e149, b: 1e149})
        c = 1.0 / rr  # c = beta / ||r||^2
        for j in range(idx.shape[0]):
            c += val[j] * (k[idx[j]] / rr)
        for i in range(n):
            ui = r[i] / rr
            Pi = P[i]
            Ni = N[i]
            for j in range(n):
                uj = r[j] / rr
                # c (u_i r_j), not (c u_i) r_j: |u_i r_j| <= 1, while c u_i overflowed with
                # ||r|| = 1e-10 next to c = 1e302 (S_t^+ finite; P became inf, then NaN)
                Pi[j] += c * (ui * r[j]) - (k[i] * uj + ui * k[j])
                Ni[j] -= ui * r[j]
            Ph[i] = _row_dot(Pi, h, n)
    else:
        xk = 0.0
        for j in range(idx.shape[0]):
            xk += val[j] * k[idx[j]]
        c = 1.0 / (1.0 + xk)
        for i in range(n):
            Pi = P[i]
            ci = c * k[i]  # c * k[i] * k[j] is (c * k[i]) * k[j]: the same bits, hoisted
            for j in range(n):
                Pi[j] -= ci * k[j]
            Ph[i] = _row_dot(Pi, h, n)
    return xx


@njit(cache=True)
def _row_dot(row, h, n):
    """row[:n] . h[:n] in four interleaved partial sums (term j in sum j mod 4), added
    pairwise at the end: the same bits on every machine (no fastmath), and for any n past the
    last non-zero term (new coordinates hold zeros), and four times the throughput of one
    running sum, whose every addition waits for the last (the pass over P dominated a round at
    d = 1000)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    m = n - n % 4
    for j in range(0, m, 4):
        s0 += row[j] * h[j]
        s1 += row[j + 1] * h[j + 1]
        s2 += row[j + 2] * h[j + 2]
        s3 += row[j + 3] * h[j + 3]
    if m < n:
        s0 += row[m] * h[m]
    if m + 1 < n:
        s1 += row[m + 1] * h[m + 1]
    if m + 2 < n:
        s2 += row[m + 2] * h[m + 2]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True)
def si_full_scaled(D, idx, val):
    """The values in the learner's units: val[j] * D[idx[j]], where D[i] is the power of two
    `unit_scale` of coordinate i's first non-zero value; a coordinate without one (D[i] = 0)
    is scaled by its value's own."""
    out = np.empty(val.shape[0])
    for j in range(val.shape[0]):
        v = val[j]
        d = D[idx[j]]
        if d == 0.0 and v != 0.0:
            d = unit_scale(v)
        out[j] = v * d
    return out


@njit(cache=True)
def unit_scale(v):
    """2^-e for |v| = m 2^e (m in [0.5, 1)), clipped to [2^-64, 1]: a scale that brings a
    value in (1, 2^64) into [0.5, 1). It never exceeds 1, so no scaled value exceeds its raw
    value (|x| < MAX_ABS_VALUE keeps every square finite), and never goes below 2^-64, so S^+
    (which scales by 1 / D_i D_j) grows by at most 2^128 over its raw-unit value (a raw S^+ of
    1e20 next to a feature of 1e149 stayed finite only so)."""
    return min(1.0, max(UNIT_SCALE_MIN, math.ldexp(1.0, -math.frexp(v)[1])))


@njit(cache=True)
def si_full_fresh(D, idx, val) -> bool:
    """Whether some val[j] != 0 sits on a coordinate without a unit yet (D = 0: never
    non-zero before, so a fresh axis of S's null space; the sink, position 0, is one)."""
    for j in range(val.shape[0]):
        if val[j] != 0.0 and D[idx[j]] == 0.0:
            return True
    return False


@njit(cache=True)
def si_full_prepare(D, idx, val, bias):
    """(positions, raw values, values in the learner's units, fresh, known, fits) of an event
    with the intercept's 1 appended at position `bias` (nothing when bias < 0): `np.append`,
    `si_full_fresh`, `si_full_scaled` and the checks in one call (their numpy calls were a third
    of the time at d = 100). `known`: no position is the sink 0 (every key learned); `fits`:
    every |value| < MAX_ABS_VALUE (NaN fails too)."""
    m = idx.shape[0]
    n = m + 1 if bias >= 0 else m
    pos = np.empty(n, np.int64)
    raw = np.empty(n)
    pos[:m] = idx
    raw[:m] = val
    if bias >= 0:
        pos[m] = bias
        raw[m] = 1.0
    known = True
    for j in range(n):
        known = known and pos[j] != 0
    fits = max_abs(val) < MAX_ABS_VALUE
    return pos, raw, si_full_scaled(D, pos, raw), si_full_fresh(D, pos, raw), known, fits


@njit(cache=True)
def si_full_fix_scales(D, idx, val):
    """Fix D[i] for each coordinate's first non-zero value (raw) as `si_full_scaled` chose it."""
    for j in range(val.shape[0]):
        i = idx[j]
        if D[i] == 0.0 and val[j] != 0.0:
            D[i] = unit_scale(val[j])


@njit(cache=True)
def si_full_eta(hPh, gamma, alpha):
    """eta = exp((h^T S^+ h - Gamma) / (2 alpha)) / alpha, the exponent capped."""
    return math.exp(min((hPh - gamma) / (2.0 * alpha), EXP_CAP)) / alpha
