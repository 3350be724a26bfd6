"""Throughput of the parameter-free learners (issue 6), as ratios measured in one process.

1. Progressive validation (predict_one then learn_one) per event on the 20-dense-feature stream:
   `RescaledExpClassifier` and `CoordinateScaleInvariantClassifier` (and River's
   `LogisticRegression` with the `RescaledExp` optimizer, for information) against the anchor
   River `LogisticRegression(optimizer=optim.AdaGrad())`. Target: >= 2x the anchor.
2. `FullScaleInvariantClassifier` at d = 100 (20,000-event dense stream): target >= 5,000
   events/s.

Systems run interleaved in rounds over the same chunk of events; each figure is the median over
rounds, so a noisy neighbour slows every system alike.

Run: `PYTHONPATH=. python benchmarks/bench_paramfree.py [--events 20000] [--rounds 5]`.

"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

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
