"""Throughput of the parameter-free learners (issue 6), as ratios measured in one process.

1. Progressive validation (predict_one then learn_one) per event on the 20-dense-feature stream:
   `RescaledExpClassifier` and `CoordinateScaleInvariantClassifier` (and River's
   `LogisticRegression` with the `RescaledExp` optimizer, for information) against the anchor
   River `LogisticRegression(optimizer=optim.AdaGrad())`. Target: >= 2x the anchor.
2. `FullScaleInvariantClassifier` at d = 100 (20,000-event dense stream): target >= 5,000
   events/s.
3. `FullScaleInvariantClassifier` against a bare Numba O(d^2) loop (issue 18: >= 0.5x) at
   d = 100, 300 and 1000: `bare_full_rounds` below does per event the full-matrix work of the
   algorithm's round, minimal (one pass over S^+ for S^+ x and S^+ h, the Sherman-Morrison
   rank-one update of S^+, h <- h - g x, Log loss) over a prebuilt float64 array. Both run
   on the same events after the model has seen d + 50 of them (S then has full rank: the
   steady state), CPU time (`time.process_time`), one untimed warm-up run each, repetitions
   interleaved; the ratio bare seconds / ours per repetition, min/median/max printed.

Systems run interleaved in rounds over the same chunk of events; each figure is the median over
rounds, so a noisy neighbour slows every system alike.

Run: `PYTHONPATH=. python benchmarks/bench_paramfree.py [--events 20000] [--rounds 5]
[--only full]`.

"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit
from river import linear_model, optim

sys.path.insert(0, str(Path(__file__).resolve().parent))

import river_pa  # noqa: E402
from streams import dense, progressive_seconds  # noqa: E402


def progressive(model, events) -> float:
    """Events per second of predict_one + learn_one over `events`."""
    return len(events) / progressive_seconds(model, events)


def interleaved(systems: dict, events, rounds: int) -> dict[str, float]:
    """Median events/s of each system, fresh models per round, systems interleaved."""
    rates = {name: [] for name in systems}
    for name, make in systems.items():  # warm-up: Numba compilation and caches
        progressive(make(), events[:500])
    for _ in range(rounds):
        for name, make in systems.items():
            rates[name].append(progressive(make(), events))
    return {name: statistics.median(r) for name, r in rates.items()}


@njit(cache=True)
def bare_full_rounds(P, h, X, y, alpha):
    """Progressive rounds of the full algorithm's O(d^2) core over the rows of X (the last
    column the intercept's 1), y in {-1, +1}: k = P x and Ph = P h in one pass over P,
    y_hat = eta x.P'h with P' = P - k k^T / beta, the Log loss's gradient, then P <- P' and
    h <- h - g x. Returns the number of mistakes (so nothing is optimised away)."""
    d = P.shape[0]
    k = np.empty(d)
    Ph = np.empty(d)
    gamma = 0.0
    mistakes = 0
    for t in range(X.shape[0]):
        x = X[t]
        for i in range(d):
            a = 0.0
            b = 0.0
            for j in range(d):
                a += P[i, j] * x[j]
                b += P[i, j] * h[j]
            k[i] = a
            Ph[i] = b
        xk = 0.0
        kh = 0.0
        hPh = 0.0
        for i in range(d):
            xk += x[i] * k[i]
            kh += k[i] * h[i]
            hPh += h[i] * Ph[i]
        beta = 1.0 + xk
        hPh -= kh * kh / beta
        y_hat = math.exp(min((hPh - gamma) / (2.0 * alpha), 700.0)) / alpha * kh / beta
        mistakes += (y_hat > 0.0) != (y[t] > 0.0)
        g = -y[t] / (1.0 + math.exp(min(y[t] * y_hat, 700.0)))
        gamma += g * g * xk / beta
        c = 1.0 / beta
        for i in range(d):
            ci = c * k[i]
            for j in range(d):
                P[i, j] -= ci * k[j]
        for j in range(d):
            h[j] -= g * x[j]
    return mistakes


def full_versus_bare(d: int, timed: int, reps: int) -> tuple:
    """(min, median, max) of bare seconds / ours over `reps` runs of `timed` events at d."""
    events = dense(n=d + 50 + timed, d=d, seed=d)
    warm = river_pa.FullScaleInvariantClassifier()
    for x, y in events[: d + 50]:
        warm.learn_one(x, y)
    chunk = events[d + 50 :]
    X = np.array([[*x.values(), 1.0] for x, _ in chunk])
    y = np.array([1.0 if label else -1.0 for _, label in chunk])

    def bare() -> float:
        P, h = np.eye(d + 1), np.zeros(d + 1)
        start = time.process_time()
        bare_full_rounds(P, h, X, y, 1.5)
        return time.process_time() - start

    def ours() -> float:
        return progressive_seconds(copy.deepcopy(warm), chunk, clock=time.process_time)

    bare(), ours()  # warm-up: compilation, caches
    ratios = [bare() / ours() for _ in range(reps)]
    return min(ratios), statistics.median(ratios), max(ratios)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["rates", "full"], action="append")
    args = parser.parse_args(argv)
    parts = args.only or ["rates", "full"]
    if "rates" in parts:
        rates_part(args)
    if "full" in parts:
        print("FullScaleInvariantClassifier vs a bare Numba O(d^2) loop, steady state, CPU time, "
              f"ratio bare/ours min/median/max of {max(args.rounds, 3)} (target >= 0.5x)")
        for d, timed in ((100, 2000), (300, 400), (1000, 60)):
            lo, med, hi = full_versus_bare(d, timed, max(args.rounds, 3))
            print(f"  d = {d:4d} ({timed} events): {lo:5.2f} / {med:5.2f} / {hi:5.2f}x",
                  flush=True)


def rates_part(args) -> None:
    """Sections 1 and 2: events/s of the parameter-free learners against River's."""

    events = dense(n=args.events, d=20)
    anchor = "River LogisticRegression(AdaGrad)"
    systems = {
        anchor: lambda: linear_model.LogisticRegression(optimizer=optim.AdaGrad()),
        "RescaledExpClassifier": river_pa.RescaledExpClassifier,
        "CoordinateScaleInvariantClassifier": river_pa.CoordinateScaleInvariantClassifier,
        "River LogisticRegression(RescaledExp)": lambda: linear_model.LogisticRegression(
            optimizer=river_pa.RescaledExp()
        ),
    }
    rates = interleaved(systems, events, args.rounds)
    print(f"dense 20 features, {args.events} events, median of {args.rounds} rounds")
    for name, rate in rates.items():
        print(f"  {name:40s} {rate:10,.0f} events/s   {rate / rates[anchor]:5.2f}x anchor")
    for name in ("RescaledExpClassifier", "CoordinateScaleInvariantClassifier"):
        verdict = "met" if rates[name] >= 2 * rates[anchor] else "MISSED"
        print(f"  target >= 2x anchor for {name}: {verdict}")

    wide = dense(n=max(args.events // 4, 2000), d=100)
    full = interleaved({"FullScaleInvariantClassifier": river_pa.FullScaleInvariantClassifier},
                       wide, args.rounds)["FullScaleInvariantClassifier"]
    verdict = "met" if full >= 5000 else "MISSED"
    print(f"FullScaleInvariantClassifier, d = 100: {full:,.0f} events/s "
          f"(target >= 5,000: {verdict})")


if __name__ == "__main__":
    main()
