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
def si_full_round(P, N, h, scratch, n, ev_pos, ev_val, m, extra_sq, trace, fresh, ph_ok, gamma,
                  g2, alpha):
    """(new, y_hat, x^T S_t^+ x, in_range) of the event staged in ev_pos[:m], ev_val[1, :m]
    (`si_full_prepare`), by `_si_full_round`. `in_range` says whether x^T S_t^+ x and
    h^T S_t^+ h lie in their exact ranges, [0, 1] and [0, g2] (g2 = sum_q g_q^2, by
    Cauchy-Schwarz), to within 1e-6 (1e-6 (1 + g2)): on nearly singular S (e.g. image pixels)
    rounding in the rank-one updates can break them, and the caller then refreshes S^+ from
    S (NaN is out of range)."""
    new, y_hat, hPh, xPx = _si_full_round(P, N, h, scratch, n, ev_pos[:m], ev_val[1, :m],
                                          extra_sq, trace, fresh, ph_ok, gamma, alpha)
    tol = 1e-6 * (1.0 + g2)
    in_range = -tol <= hPh <= g2 + tol and -1e-6 <= xPx <= 1.0 + 1e-6
    return new, y_hat, xPx, in_range


@njit(cache=True)
def _si_full_round(P, N, h, scratch, n, idx, val, extra_sq, trace, fresh, ph_ok, gamma, alpha):
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
        Ph[:] = 0.0
        for i in range(n):
            _add_row(Ph, P[i], h[i], n)
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
def si_full_commit(S, P, N, h, D, scratch, n, ev_pos, ev_val, m, new, g):
    """End round t on the first n coordinates, from the k = scratch[0], r = scratch[1] that
    `si_full_round` filled for this event (staged by `si_full_prepare`: positions
    ev_pos[:m], values in the features' units ev_val[0, :m] and in the learner's
    ev_val[1, :m]): fix the units D of coordinates non-zero for the first
    time (`si_full_fix_scales`), S <- S + x x^T (its lower triangle only: `np.linalg.eigh`
    reads no other), h <- h - g x, P <- S_t^+ (and N <- I - S_t S_t^+ when x added a
    direction), in O(n^2), and scratch[2] <- P h for the next round, each row of P added in
    (`_add_row`) right after its update (one pass over P instead of a second one next round;
    `si_full_round` sums in the same order, so a restored copy holds the same bits). scratch[3]
    is zeros, used by `_add_outer_lower`. Returns ||x||^2, by which trace(S) grows."""
    idx = ev_pos[:m]
    val = ev_val[1, :m]
    si_full_fix_scales(D, idx, ev_val[0, :m])
    xx = 0.0
    for a in range(idx.shape[0]):
        xx += val[a] * val[a]
    _add_outer_lower(S, idx, val, scratch[3])
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
        Ph[:] = 0.0
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
            _add_row(Ph, Pi, h[i], n)
    else:
        xk = 0.0
        for j in range(idx.shape[0]):
            xk += val[j] * k[idx[j]]
        c = 1.0 / (1.0 + xk)
        Ph[:] = 0.0
        for i in range(n):
            Pi = P[i]
            ci = c * k[i]  # c * k[i] * k[j] is (c * k[i]) * k[j]: the same bits, hoisted
            hi = h[i]
            for j in range(n):  # `_add_row` fused into the update: one pass over the row
                p = Pi[j] - ci * k[j]
                Pi[j] = p
                Ph[j] += p * hi
    return xx


@njit(cache=True)
def _add_outer_lower(S, idx, val, xd):
    """S += x x^T on its lower triangle (S[i, j] with j <= i), x sparse (positions `idx`,
    distinct; values `val`). Each entry gets one product x_i x_j, so any loop order gives the
    same bits. An event on at least half the positions up to its largest (dense features) is
    scattered into `xd` (zeros, of length past that position; zeros again on return) and
    each of its rows updated as one contiguous run, which the compiler vectorises (adding
    x_i 0 leaves S unchanged: S is never -0.0); a sparser one pairs its positions, 3.5x
    slower per pair at d = 100."""
    m = idx.shape[0]
    top = 0
    for a in range(m):
        top = max(top, idx[a])
    if 2 * m > top:
        for a in range(m):
            xd[idx[a]] = val[a]
        for a in range(m):
            Sa = S[idx[a]]
            va = val[a]
            for j in range(idx[a] + 1):
                Sa[j] += va * xd[j]
        for a in range(m):
            xd[idx[a]] = 0.0
        return
    for a in range(m):
        ia = idx[a]
        Sa = S[ia]
        va = val[a]
        for b in range(m):
            if idx[b] <= ia:
                Sa[idx[b]] += va * val[b]


@njit(cache=True)
def _add_row(Ph, row, hi, n):
    """Ph[:n] += row[:n] hi, the step of P h = sum_i P[i] h_i that follows row i's update (P
    is symmetric in exact arithmetic; in float64 its rows and columns differ in the last
    bits, about 1e-11 of its largest entry, so this is P^T h to that rounding): an
    element-wise loop the compiler vectorises without reordering any sum (a dot product per
    row cannot be, without fastmath), so every machine computes the same bits, 3.5x the
    throughput of four interleaved partial sums at d = 100. A zero h_i adds nothing (Ph is
    never -0.0), skipped or not: new coordinates, and zeros past the last one, never move a
    bit."""
    if hi != 0.0:
        for j in range(n):
            Ph[j] += row[j] * hi


@njit(cache=True)
def unit_scale(v):
    """2^-e for |v| = m 2^e (m in [0.5, 1)), clipped to [2^-64, 1]: a scale that brings a
    value in (1, 2^64) into [0.5, 1). It never exceeds 1, so no scaled value exceeds its raw
    value (|x| < MAX_ABS_VALUE keeps every square finite), and never goes below 2^-64, so S^+
    (which scales by 1 / D_i D_j) grows by at most 2^128 over its raw-unit value (a raw S^+ of
    1e20 next to a feature of 1e149 stayed finite only so)."""
    return min(1.0, max(UNIT_SCALE_MIN, math.ldexp(1.0, -math.frexp(v)[1])))


@njit(cache=True)
def si_full_prepare(D, idx, val, bias, ev_pos, ev_val):
    """Stage an event (positions `idx`, values `val`) for `si_full_round` and
    `si_full_commit`: with the intercept's 1 appended at position `bias` (nothing when
    bias < 0), its positions other than the sink 0 go to ev_pos[:m], their raw values to
    ev_val[0, :m] and their values in the learner's units to ev_val[1, :m]: val[j] D_i,
    where D_i is the power of two `unit_scale` of coordinate i's first non-zero value, or
    the value's own when there is none yet (D_i = 0). The buffers hold len(idx) + 1 values.

    Returns (m, extra_sq, fresh, known, fits): extra_sq is the squared norm of the scaled
    values at the sink (keys never learned: fresh axes of the null space), `fresh` whether
    a non-zero value sits on a coordinate without a unit (the sink is one), `known` whether
    no position is the sink, `fits` whether every |value| < MAX_ABS_VALUE (NaN fails too).
    One call, writing into buffers the learner keeps: the numpy calls and arrays it replaces
    were a third of a round's time at d = 100."""
    fits = max_abs(val) < MAX_ABS_VALUE
    m = 0
    extra_sq = 0.0
    fresh = False
    for j in range(idx.shape[0] + (1 if bias >= 0 else 0)):
        i = idx[j] if j < idx.shape[0] else bias
        v = val[j] if j < idx.shape[0] else 1.0
        d = D[i]
        if v != 0.0 and d == 0.0:
            fresh = True
            d = unit_scale(v)
        if i == 0:
            extra_sq += (v * d) * (v * d)
            continue
        ev_pos[m] = i
        ev_val[0, m] = v
        ev_val[1, m] = v * d
        m += 1
    known = m == idx.shape[0] + (1 if bias >= 0 else 0)
    return m, extra_sq, fresh, known, fits


@njit(cache=True)
def si_full_stage_round(D, idx, val, bias, ev_pos, ev_val, P, N, h, scratch, n, trace, ph_ok,
                        gamma, g2, alpha):
    """`si_full_prepare` then, if the values fit, `si_full_round`, in one call (each call
    from Python costs about 0.4 us, a tenth of a round at d = 100): (m, extra_sq, fresh,
    known, fits, new, y_hat, x^T S_t^+ x, in_range); NaN round quantities when not `fits`."""
    m, extra_sq, fresh, known, fits = si_full_prepare(D, idx, val, bias, ev_pos, ev_val)
    if not fits:
        return m, extra_sq, fresh, known, fits, False, np.nan, np.nan, False
    new, y_hat, xPx, in_range = si_full_round(P, N, h, scratch, n, ev_pos, ev_val, m, extra_sq,
                                              trace, fresh, ph_ok, gamma, g2, alpha)
    return m, extra_sq, fresh, known, fits, new, y_hat, xPx, in_range


@njit(cache=True)
def si_full_stage_round_packed(D, idx, packed, bias, ev_pos, ev_val, P, N, h, scratch, n, trace,
                               ph_ok, gamma, g2, alpha):
    """`si_full_stage_round` with the values as packed float64 bytes (`struct.pack`), read in
    place."""
    return si_full_stage_round(D, idx, np.frombuffer(packed, dtype=np.float64), bias, ev_pos,
                               ev_val, P, N, h, scratch, n, trace, ph_ok, gamma, g2, alpha)


@njit(cache=True)
def si_full_fix_scales(D, idx, val):
    """Fix D[i] for each coordinate's first non-zero value (raw) as `si_full_prepare` chose it."""
    for j in range(val.shape[0]):
        i = idx[j]
        if D[i] == 0.0 and val[j] != 0.0:
            D[i] = unit_scale(val[j])


@njit(cache=True)
def si_full_eta(hPh, gamma, alpha):
    """eta = exp((h^T S^+ h - Gamma) / (2 alpha)) / alpha, the exponent capped."""
    return math.exp(min((hPh - gamma) / (2.0 * alpha), EXP_CAP)) / alpha
