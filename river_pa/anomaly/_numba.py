"""Numba kernels of the Passive-Aggressive uniclass learner (no River imports here).

The centre w (one coordinate per feature position) is stored as ``w = scale * v`` with `v` a
float64 array, so that shrinking every coordinate absent from an event (an absent feature is a
0 in the point y) is one multiplication of `scale`. `sq` is ||w||^2, kept up to date so the
distance ||w - y|| costs O(event size):

    ||w - y||^2 = sum_{j in event} (w_j - y_j)^2 + (||w||^2 - sum_{j in event} w_j^2).

`extra` is the (n+1)-th coordinate of the learned-radius reduction (0 for a fixed radius): the
point's (n+1)-th coordinate is always 0, so it is shrunk like an absent feature.

Shapes: `v` float64 (positions); an event is `idx` (int64, m, distinct positions) and `val`
(float64, m).

Source: Crammer et al. (2006), Online Passive-Aggressive Algorithms, JMLR 7, Section 6.

"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_pa._core._numba import step_size

# Below this scale the stored v would grow towards overflow: fold the scale back into v.
_MIN_SCALE = 1e-100


@njit(cache=True)
def distance_sq(v, scale, sq, idx, val):
    """(sum over the event of (w_j - y_j)^2, ||w||^2 outside the event), both >= 0."""
    diff = 0.0
    inside = 0.0
    for j in range(idx.shape[0]):
        w = scale * v[idx[j]]
        d = val[j] - w
        diff += d * d
        inside += w * w
    return diff, max(sq - inside, 0.0)


@njit(cache=True)
def learn(variant, c, radius, v, scale, sq, extra, idx, val):
    """One PA uniclass step: move w towards y by tau along (y - w) / ||y - w||.

    The distance includes `extra` (the reduction's last coordinate) and the loss is
    max(0, distance - radius); tau is the unit-norm step of the variant (||x||^2 = 1:
    l, min(C, l), l / (1 + 1/(2C))). Returns (scale, sq, extra, loss, tau) after the step.

    """
    diff, rest = distance_sq(v, scale, sq, idx, val)
    dist = np.sqrt(diff + rest + extra * extra)
    loss = dist - radius
    if loss <= 0.0:
        return scale, sq, extra, 0.0, 0.0
    tau = step_size(variant, loss, 1.0, c)
    s = min(tau / dist, 1.0)
    keep = 1.0 - s
    new_scale = scale * keep
    if new_scale < _MIN_SCALE:
        new_scale, inside = _fold(v, scale, keep, idx, val)
    else:
        inside = _move(v, scale, new_scale, idx, val, s)
    return new_scale, keep * keep * rest + inside, extra * keep, loss, tau


@njit(cache=True)
def _move(v, scale, new_scale, idx, val, s):
    """Move the event's coordinates by s (y_j - w_j) under the new scale; their ||.||^2."""
    inside = 0.0
    for j in range(idx.shape[0]):
        p = idx[j]
        w = scale * v[p]
        w += s * (val[j] - w)
        v[p] = w / new_scale
        inside += w * w
    return inside


@njit(cache=True)
def _fold(v, scale, keep, idx, val):
    """The step when the scale would underflow: fold it into v (O(positions), rare).

    keep == 0 (a hard step onto a point with radius 0) zeroes every absent coordinate.

    """
    old = np.empty(idx.shape[0])
    for j in range(idx.shape[0]):
        old[j] = scale * v[idx[j]]
    v *= scale * keep
    for j in range(idx.shape[0]):
        v[idx[j]] = old[j] / scale
    return 1.0, _move(v, scale, 1.0, idx, val, 1.0 - keep)
