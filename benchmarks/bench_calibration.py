"""`calibration="temperature"`: its cost per event, and its quality across sets and orders.

Speed (default): progressive validation (predict_proba_one then learn_one) over River's
Phishing repeated 20 times (25,000 events, 9 features): `PAClassifier()` with and without
calibration, and River's `LogisticRegression()` (the anchor of NOTES.md), interleaved rounds in
this process; prints events/s (min / median / max of the rounds) and the ratios of the medians.

Quality (``--quality``): issue 19's table. For every shared binary set, in file order and in
`--shuffles` seeded shuffles, for C in {0.01, 0.1, 1} and every variant: the progressive
LogLoss and 10-bin ECE of the uncalibrated link and of the calibrated learner, and two batch
anchors fitted after the fact on the same progressive margins (in-sample: the best a
calibrator of the margin could have done): Platt's sigmoid and isotonic regression, the two
maps of scikit-learn's `CalibratedClassifierCV`. Prints one line per run, then the spread of
calibrated / uncalibrated LogLoss and the runs where calibration is worse by more than 1% or
leaves ECE above 0.03.

Run: ``python benchmarks/bench_calibration.py [--rounds 5]`` or
``python benchmarks/bench_calibration.py --quality [--shuffles 10] [--sets a9a,elec2]``
(the full table takes about 20 minutes on one core). Timings on a shared machine are noisy:
read the ratios.

"""

from __future__ import annotations

import argparse
import random
import statistics

import numpy as np
from river import datasets, linear_model, metrics

import river_pa
from streams import progressive_seconds

LEARNERS = {
    "PAClassifier()": lambda: river_pa.PAClassifier(),
    "PAClassifier(calibration='temperature')":
        lambda: river_pa.PAClassifier(calibration="temperature"),
    "river LogisticRegression()": lambda: linear_model.LogisticRegression(),
}
SETS = ["phishing", "a9a", "elec2", "mushrooms"]


def events_per_s(model, events) -> float:
    return len(events) / progressive_seconds(model, events, "predict_proba_one")


def speed(rounds: int) -> dict:
    events = list(datasets.Phishing()) * 20
    for make in LEARNERS.values():  # compile / warm up
        events_per_s(make(), events[:100])
    runs = {name: [] for name in LEARNERS}
    for _ in range(rounds):
        for name, make in LEARNERS.items():
            runs[name].append(events_per_s(make(), events))
    base = statistics.median(runs["PAClassifier()"])
    for name, rates in runs.items():
        med = statistics.median(rates)
        print(f"{name:<42}{min(rates):>10,.0f}{med:>10,.0f}{max(rates):>10,.0f} events/s"
              f"   {med / base:5.2f}x PAClassifier()")
    return runs


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error of P(True) over `bins` equal-width bins."""
    which = np.minimum((p * bins).astype(int), bins - 1)
    return sum(abs(p[which == b].mean() - y[which == b].mean()) * (which == b).sum()
               for b in range(bins) if (which == b).any()) / len(p)


def progressive(model, events) -> tuple[float, float, np.ndarray]:
    """(LogLoss, ECE, the progressive margins) of one pass."""
    loss, p, m = metrics.LogLoss(), [], []
    for x, y in events:
        proba = model.predict_proba_one(x)
        loss.update(y, proba)
        p.append(proba[True])
        m.append(model.decision_function_one(x))
        model.learn_one(x, y)
    return loss.get(), ece(np.array(p), np.array([y for _, y in events], float)), np.array(m)


def anchors(m: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """In-sample LogLoss of Platt's sigmoid and of isotonic regression on the margins."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    platt = LogisticRegression(C=1e6).fit(m[:, None], y).predict_proba(m[:, None])[:, 1]
    iso = IsotonicRegression(out_of_bounds="clip", y_min=1e-15, y_max=1 - 1e-15).fit(m, y)
    return log_loss(y, platt), log_loss(y, iso.predict(m))


def quality(shuffles: int, names: list[str]) -> list[dict]:
    from river_pa.evaluate.datasets import load

    rows = []
    for name in names:
        data = load(name)
        events = [(x, bool(y > 0) if not isinstance(y, bool) else y)
                  for x, y in zip(data.x, data.y)]
        for order in range(shuffles + 1):
            stream = list(events)
            if order:
                random.Random(order).shuffle(stream)
            y = np.array([label for _, label in stream], float)
            for C in (0.01, 0.1, 1.0):
                for variant in ("PA", "PA-I", "PA-II"):
                    raw = progressive(river_pa.PAClassifier(C=C, variant=variant), stream)
                    cal = progressive(river_pa.PAClassifier(C=C, variant=variant,
                                                            calibration="temperature"), stream)
                    platt, iso = anchors(raw[2], y)
                    rows.append({"set": name, "order": order, "C": C, "variant": variant,
                                 "raw": raw[:2], "cal": cal[:2], "platt": platt, "iso": iso})
                    print(f"{name:10} order {order:2} C={C:<5} {variant:6} LogLoss "
                          f"{raw[0]:.4f} -> {cal[0]:.4f} (Platt {platt:.4f}, isotonic "
                          f"{iso:.4f})  ECE {raw[1]:.4f} -> {cal[1]:.4f}", flush=True)
    summary(rows)
    return rows


def summary(rows: list[dict]) -> None:
    ratios = [r["cal"][0] / r["raw"][0] for r in rows]
    q = np.quantile(ratios, [0, 0.5, 1])
    print(f"\n{len(rows)} runs: calibrated / uncalibrated LogLoss min {q[0]:.3f}, median "
          f"{q[1]:.3f}, max {q[2]:.4f}")
    worse = [r for r, ratio in zip(rows, ratios) if ratio > 1.01]
    print(f"worse by more than 1%: {len(worse)}")
    high = [r for r in rows if r["cal"][1] > 0.03 and r["raw"][1] > 0.03]
    print(f"ECE above 0.03 after calibration where it was above before: {len(high)} of "
          f"{sum(r['raw'][1] > 0.03 for r in rows)}")
    for name in sorted({r["set"] for r in rows}):
        mine = [r for r in rows if r["set"] == name]
        print(f"  {name:10} median ECE {statistics.median(r['raw'][1] for r in mine):.4f} -> "
              f"{statistics.median(r['cal'][1] for r in mine):.4f}; median LogLoss "
              f"{statistics.median(r['raw'][0] for r in mine):.4f} -> "
              f"{statistics.median(r['cal'][0] for r in mine):.4f} (Platt "
              f"{statistics.median(r['platt'] for r in mine):.4f}, isotonic "
              f"{statistics.median(r['iso'] for r in mine):.4f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--shuffles", type=int, default=10)
    parser.add_argument("--sets", default=",".join(SETS))
    args = parser.parse_args(argv)
    if args.quality:
        return quality(args.shuffles, args.sets.split(","))
    return speed(args.rounds)


if __name__ == "__main__":
    main()
