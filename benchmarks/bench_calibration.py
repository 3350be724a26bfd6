"""Cost of `calibration="temperature"` per event, against the uncalibrated learner and River.

Progressive validation (predict_proba_one then learn_one) over River's Phishing repeated 20
times (25,000 events, 9 features): `PAClassifier()` with and without calibration, and River's
`LogisticRegression()` (the anchor of NOTES.md), interleaved rounds in this process; prints
events/s (min / median / max of the rounds) and the ratios of the medians.

Run: ``python benchmarks/bench_calibration.py [--rounds 5]``. Timings on a shared machine are
noisy: read the ratios.

"""

from __future__ import annotations

import argparse
import statistics

from river import datasets, linear_model

import river_pa
from streams import progressive_seconds

LEARNERS = {
    "PAClassifier()": lambda: river_pa.PAClassifier(),
    "PAClassifier(calibration='temperature')":
        lambda: river_pa.PAClassifier(calibration="temperature"),
    "river LogisticRegression()": lambda: linear_model.LogisticRegression(),
}


def events_per_s(model, events) -> float:
    return len(events) / progressive_seconds(model, events, "predict_proba_one")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    events = list(datasets.Phishing()) * 20
    for make in LEARNERS.values():  # compile / warm up
        events_per_s(make(), events[:100])
    runs = {name: [] for name in LEARNERS}
    for _ in range(args.rounds):
        for name, make in LEARNERS.items():
            runs[name].append(events_per_s(make(), events))
    base = statistics.median(runs["PAClassifier()"])
    for name, rates in runs.items():
        med = statistics.median(rates)
        print(f"{name:<42}{min(rates):>10,.0f}{med:>10,.0f}{max(rates):>10,.0f} events/s"
              f"   {med / base:5.2f}x PAClassifier()")
    return runs


if __name__ == "__main__":
    main()
