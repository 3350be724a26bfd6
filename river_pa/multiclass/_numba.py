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
once (see `multilabel_cut_step`), the chain rule the same on a classifier chain (see
`multilabel_chain_step`). `V` (label rows x label rows) holds the chain's label-on-label
weights. The multilabel state has a leading axis of chains (an ensemble of classifier chains
in different label orders; one chain for the rules without a chain), whose scores are
averaged. Averaging keeps the running sums `U`, `ub`, `UV` of t * each step (t the event's
number; 0 when not averaging), from which `multilabel_predict` forms the mean weights.

Every batch kernel runs its rows through the same row function as the per-event path, in the
same order, so `learn_many` gives bit-for-bit the weights of a `learn_one` loop.

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core._numba import step_size

MAX_LOSS, PREDICTION_BASED = 0, 1
RANKING, THRESHOLD, CHAIN = 0, 1, 2


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
def shift_averaged(W, b, U, ub, t, ic, idx, val, r, tau):
    """w_r += tau x, and u_r += t tau x when averaging (t > 0 is the event's number): U sums
    t * every step, so ((t + 1) W - U) / t is the mean of the weights after events 1..t."""
    shift(W, b, ic, idx, val, r, tau)
    if t > 0:
        shift(U, ub, ic, idx, val, r, t * tau)


@njit(cache=True)
def multilabel_step(variant, c, W, b, U, ub, t, ic, idx, val, sq, s, n, rel):
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
            shift_averaged(W, b, U, ub, t, ic, idx, val, r, tau)
        if q >= 0:
            shift_averaged(W, b, U, ub, t, ic, idx, val, q, -tau)
    return tau


@njit(cache=True)
def multilabel_cut_step(variant, c, W, b, U, ub, t, ic, idx, val, sq, s, n, rel):
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
                shift_averaged(W, b, U, ub, t, ic, idx, val, r, z * tau)
    return tau


@njit(cache=True)
def chained(s, V, order, p, rel):
    """s[r] + sum_q V[r, q] rel[q] over the labels q before r = order[p] in the chain: label
    r's score with the relevance (0 or 1) of every label before it as features of weights V[r]."""
    r = order[p]
    v = s[r]
    for i in range(p):
        if rel[order[i]]:
            v += V[r, order[i]]
    return v


@njit(cache=True)
def multilabel_chain_step(variant, c, W, b, V, U, ub, UV, t, ic, idx, val, sq, s, n, rel, order):
    """The threshold rule (`multilabel_cut_step`) on a classifier chain; returns tau.

    `order` (int64, n) lists the label rows in chain order. Label r's features are x, the
    intercept and the true relevance rel[q] (0 or 1) of every label q before it (Read et al.
    2011's chain, learned on the true labels): its score is `chained(s, V, order, p, rel)` and
    its squared norm ||x||^2 + ic + #{q before r relevant}, so ||grad||^2 sums those norms over
    the violated labels; each violated row moves by z_r tau times its features (V[r, q] by
    z_r tau rel[q]).

    """
    loss = 0.0
    norm = 0.0
    before = 0.0
    for p in range(n):
        r = order[p]
        lr = 1.0 - (chained(s, V, order, p, rel) if rel[r] else -chained(s, V, order, p, rel))
        if lr > 0.0:
            loss += lr
            norm += sq + ic + before
        before += rel[r]
    if loss == 0.0:
        return 0.0
    tau = step_size(variant, loss, norm, c)
    if tau == 0.0:
        return 0.0
    for p in range(n):  # row r's violation reads only row r, checked before it moves
        r = order[p]
        z = 1.0 if rel[r] else -1.0
        if 1.0 - z * chained(s, V, order, p, rel) > 0.0:
            shift_averaged(W, b, U, ub, t, ic, idx, val, r, z * tau)
            for i in range(p):
                q = order[i]
                if rel[q]:
                    V[r, q] += z * tau
                    if t > 0:
                        UV[r, q] += t * z * tau
    return tau


@njit(cache=True)
def multilabel_update(rule, variant, cs, w, W, b, V, U, ub, UV, t, ic, idx, val, sq, S, n, rel,
                      orders):
    """The step of `rule` (THRESHOLD, RANKING or CHAIN) on the event's scores S[j] = W[j] x +
    b[j] of each chain j (`W` chains x label rows x feature positions, `orders[j]` chain j's
    label rows in order), chain j with aggressiveness cs[j] times the sample weight w; `t` > 0
    also records the step in the running sums U, ub, UV (averaging)."""
    for j in range(W.shape[0]):
        c = cs[j] * w
        if rule == THRESHOLD:
            multilabel_cut_step(variant, c, W[j], b[j], U[j], ub[j], t, ic, idx, val, sq, S[j],
                                n, rel)
        elif rule == CHAIN:
            multilabel_chain_step(variant, c, W[j], b[j], V[j], U[j], ub[j], UV[j], t, ic, idx,
                                  val, sq, S[j], n, rel, orders[j])
        else:
            multilabel_step(variant, c, W[j], b[j], U[j], ub[j], t, ic, idx, val, sq, S[j], n,
                            rel)


@njit(cache=True)
def chain_scores(W, b, n, idx, val, out):
    """out[j] = W[j] x + b[j] for each chain j (`scores`); returns ||x||^2."""
    sq = 0.0
    for j in range(W.shape[0]):
        sq = scores(W[j], b[j], n, idx, val, out[j])
    return sq


@njit(cache=True)
def multilabel_mistakes(S, SU, V, UV, t, n, chain, orders, rel, group, miss_avg, miss_last):
    """Add to each chain's counts (float64 arrays, in place) the labels its group's averaged
    weights predict wrong and those its group's last weights predict wrong, for relevances
    `rel` (S, SU: each chain's W x + b and U x + ub, before the step). The chains are in
    groups of `group` consecutive ones (the label orders learned with one C), each group
    predicting by the mean of its chains; every chain of a group gets the group's counts."""
    k = S.shape[0]
    avg = np.empty(n)
    last = np.empty(n)
    none = np.zeros(group)  # no chain's last weights forced
    for a in range(0, k, group):
        b = a + group
        multilabel_predict(S[a:b], SU[a:b], V[a:b], UV[a:b], t, none, none, n, chain,
                           orders[a:b], avg)
        multilabel_predict(S[a:b], SU[a:b], V[a:b], UV[a:b], 0, none, none, n, chain,
                           orders[a:b], last)
        wa = wl = 0
        for r in range(n):
            wa += (avg[r] > 0.0) != (rel[r] != 0)
            wl += (last[r] > 0.0) != (rel[r] != 0)
        for j in range(a, b):
            miss_avg[j] += wa
            miss_last[j] += wl


@njit(cache=True)
def multilabel_dense(rule, variant, cs, W, b, V, U, ub, UV, t, average, ic, cols, X, R, n, sw,
                     orders, group, miss_avg, miss_last):
    """Run the rows of a dense batch through `multilabel_mistakes` (once averaging has a past:
    counted in miss_avg, miss_last) and `multilabel_update` (`R` is rows x label rows); `t`
    learned events so far, counted on when `average`. Returns the new count."""
    S = np.zeros((W.shape[0], n))
    SU = np.zeros((W.shape[0], n))
    chain = rule == CHAIN
    for i in range(X.shape[0]):
        sq = chain_scores(W, b, n, cols, X[i], S)
        if sw[i] > 0.0:
            if t > 0:
                chain_scores(U, ub, n, cols, X[i], SU)
                multilabel_mistakes(S, SU, V, UV, t, n, chain, orders, R[i], group, miss_avg,
                                    miss_last)
            t += average
            multilabel_update(rule, variant, cs, sw[i], W, b, V, U, ub, UV, t, ic, cols, X[i],
                              sq, S, n, R[i], orders)
    return t


@njit(cache=True)
def multilabel_predict(S, SU, V, UV, t, miss_last, miss_avg, n, chain, orders, out):
    """out[r]: the score label r is predicted by (> 0: relevant), the mean over the chains j
    of chain j's score from S[j] = W[j] x + b[j] and SU[j] = U[j] x + ub[j]. With t > 0
    learned events every weight of chain j is its mean over those events, ((t + 1) W - U) / t
    (averaging), unless miss_last[j] < miss_avg[j] (its last weights have erred less: they
    predict); t = 0: the last weights; with
    `chain`, label r adds its chain weights of the labels predicted relevant before it in that
    chain's order."""
    k = S.shape[0]
    one = np.empty(n)
    out[:n] = 0.0
    for j in range(k):
        order = orders[j]
        tj = 0 if miss_last[j] < miss_avg[j] else t
        for p in range(n):
            r = order[p]
            v = S[j, r] if tj == 0 else ((tj + 1) * S[j, r] - SU[j, r]) / tj
            if chain:
                for i in range(p):
                    q = order[i]
                    if one[q] > 0.0:
                        v += V[j, r, q] if tj == 0 else ((tj + 1) * V[j, r, q] - UV[j, r, q]) / tj
            one[r] = v
        for r in range(n):
            out[r] += one[r]
    if k > 1:
        for r in range(n):
            out[r] /= k


@njit(cache=True)
def multilabel_predict_dense(S, SU, V, UV, t, miss_last, miss_avg, n, chain, orders):
    """`multilabel_predict` on every row of base scores S, SU (chains x rows x n)."""
    out = np.empty((S.shape[1], n))
    for i in range(S.shape[1]):
        multilabel_predict(S[:, i], SU[:, i], V, UV, t, miss_last, miss_avg, n, chain, orders,
                           out[i])
    return out
