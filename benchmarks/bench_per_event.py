"""Per-event speed of `PAClassifier` against a 20-line pure-Python PA-I and River (issue 18).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_per_event.py            # full streams, 5 repetitions
    PYTHONPATH=. python benchmarks/bench_per_event.py --quick    # 1/10 of each stream

Progressive validation (``predict_one`` then ``learn_one``) of three systems on three streams
(`streams.py`): Phishing x20, dense-20 and the text-like sparse stream (30 of 2^18 string
keys: a vocabulary that grows on most events). Systems: ours (PA-I, C=1, vocabulary), `DictPAI`
below (the same update in plain Python over a dict of weights) and River's
``linear_model.PAClassifier(mode=1)``. Repetitions are interleaved in this process and timed in
CPU time of this thread (the cores are shared: wall time swings 5x there); for each the ratio
``their seconds / our seconds`` is taken, and min/median/max of those ratios printed.
Targets (issue 18): median >= 1.3x `DictPAI` and >= 4x River on all three streams.

Before timing, one untimed pass per stream asserts that ours and `DictPAI` predict the same
label on every event and end with bit-for-bit equal weights and intercept: the speed-ups must
not change a result.

"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from river import linear_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
import streams  # noqa: E402

from river_pa import PAClassifier  # noqa: E402


class DictPAI:
    """PA-I in plain Python: weights in a dict, the intercept a feature of value 1 (in the
    norm), sums in the dict's order and the intercept added last, as river-pa does."""

    def __init__(self, C: float = 1.0):
        self.w, self.b, self.C = {}, 0.0, C

    def predict_one(self, x: dict) -> bool:
        w, s = self.w, 0.0
        for k, v in x.items():
            s += w.get(k, 0.0) * v
        return self.b + s > 0.0

    def learn_one(self, x: dict, y: bool) -> None:
        w, s, q, y = self.w, 0.0, 0.0, 1.0 if y else -1.0
        for k, v in x.items():
            s += w.get(k, 0.0) * v
            q += v * v
        loss = 1.0 - y * (self.b + s)
        if loss > 0.0:
            step = min(self.C, loss / (q + 1.0)) * y
            for k, v in x.items():
                w[k] = w.get(k, 0.0) + step * v
            self.b += step


SYSTEMS = {
    "ours": lambda: PAClassifier(variant="PA-I", C=1.0),
    "python": DictPAI,
    "river": lambda: linear_model.PAClassifier(C=1.0, mode=1),
}


def check_identical(name: str, stream) -> None:
    """Assert ours and `DictPAI` agree on every prediction and on the final weights."""
    ours, ref = SYSTEMS["ours"](), DictPAI()
    for i, (x, y) in enumerate(stream):
        assert ours.predict_one(x) == ref.predict_one(x), f"{name}: event {i} predicted apart"
        ours.learn_one(x, y)
        ref.learn_one(x, y)
    nonzero = {k: v for k, v in ref.w.items() if v != 0.0}
    assert ours.weights == nonzero and ours.intercept == ref.b, f"{name}: weights differ"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of each stream")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    data = {
        "phishing_x20": lambda: streams.phishing_x20()[: 25_000 // scale],
        "dense-20": lambda: streams.dense(200_000 // scale, 20),
        "text": lambda: streams.sparse(200_000 // scale),
    }
    print(f"predict_one + learn_one per event, {args.reps} interleaved repetitions; "
          "ratio = their time / ours (min/median/max)")
    for name, make_stream in data.items():
        stream = make_stream()
        check_identical(name, stream)
        times = {system: [] for system in SYSTEMS}
        for _ in range(args.reps):
            for system, make in SYSTEMS.items():
                times[system].append(streams.progressive_seconds(make(), stream,
                                                                   clock=time.thread_time))
        rate = {s: len(stream) / statistics.median(t) for s, t in times.items()}
        line = f"  {name:13s} ours {rate['ours']:>10,.0f}/s"
        for other, target in (("python", 1.3), ("river", 4.0)):
            ratios = sorted(a / b for a, b in zip(times[other], times["ours"]))
            line += (f" | vs {other} ({rate[other]:>9,.0f}/s) {ratios[0]:.2f}/"
                     f"{statistics.median(ratios):.2f}/{ratios[-1]:.2f}x (>= {target}x)")
        print(line, flush=True)
        del stream


if __name__ == "__main__":
    main()
