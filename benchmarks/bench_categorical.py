"""Categorical streams: `PAClassifier(categorical=True)` against River's `OneHotEncoder` in
front of the same learner (issue 23).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_categorical.py            # full streams, 5 repetitions
    PYTHONPATH=. python benchmarks/bench_categorical.py --quick    # 1/10 of each stream
    PYTHONPATH=. python benchmarks/bench_categorical.py --pipeline-batch

``--pipeline-batch`` times the serving quick start's pipeline
(`examples/categorical_pipeline.py`: numbers scaled, strings one-hot encoded, PAClassifier) on
batches of 100 events (the predictor's batch) of its Agrawal stream after 2,000 learned:
River's ``Pipeline.predict_proba_many`` on a DataFrame against a ``predict_proba_one`` loop,
and counts the probabilities that differ between the two. It is why the predictor serves a
pipeline event by event.

Progressive validation (``predict_one`` then ``learn_one``, PA-I, C=1) on two streams of
`streams.py`: the synthetic `categorical` (20,000 events: 3 numbers, 3 strings, a list of
tags) and `elec2_categorical` (the shared Elec2, 45,312 events: 5 numbers, the weekday and the
half-hour as strings; skipped when the shared data is absent). Systems, each with a
vocabulary and hashed (``n_features=2**20``):

* ours: ``PAClassifier(categorical=True)``, the strings one-hot inside the learner;
* river: ``TransformerUnion(SelectType(str, list, set) | OneHotEncoder(drop_zeros=True),
  SelectType(Number)) | PAClassifier()``, River's fastest exact encoder in front (its default,
  ``drop_zeros=False``, also sends a 0 for every category seen before: slower still).

Before timing, one pass per stream and system asserts that both predict the same label on
every event (so their accuracies are equal) and end with the same weights (up to key naming)
and intercept. Repetitions are interleaved in this process and timed in CPU time of this
thread; for each, the ratio ``river seconds / our seconds``, and min/median/max of those
ratios are printed.

"""

from __future__ import annotations

import argparse
import numbers
import statistics
import sys
import time
from pathlib import Path

from river import compose, preprocessing

sys.path.insert(0, str(Path(__file__).resolve().parent))
import streams  # noqa: E402

from river_pa import PAClassifier  # noqa: E402
from river_pa.evaluate.datasets import shared_folder  # noqa: E402


def systems(n_features):
    def river():
        strings = compose.SelectType(str, list, set) | preprocessing.OneHotEncoder(
            drop_zeros=True)
        return compose.TransformerUnion(strings, compose.SelectType(numbers.Number)) | \
            PAClassifier(n_features=n_features)

    return {"ours": lambda: PAClassifier(n_features=n_features, categorical=True),
            "river": river}


def check_identical(name: str, stream, make: dict) -> float:
    """Assert both systems predict alike on every event and end with the same weights; return
    the (common) progressive accuracy."""
    ours, river = make["ours"](), make["river"]()
    right = 0
    for i, (x, y) in enumerate(stream):
        p = ours.predict_one(x)
        assert p == river.predict_one(x), f"{name}: event {i} predicted apart"
        right += p == y
        ours.learn_one(x, y)
        river.learn_one(x, y)
    theirs = river[-1]
    assert sorted(ours.weights.values()) == sorted(theirs.weights.values()), name
    assert ours.intercept == theirs.intercept, name
    return right / len(stream)


def pipeline_batch(reps: int, batch: int = 100) -> None:
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from examples.categorical_pipeline import model
    from examples.produce_elec2 import agrawal

    stream = agrawal(2_000 + batch * reps)
    warm, rest = stream[:2_000], [x for x, _ in stream[2_000:]]
    pipeline = model.clone()
    for x, y in warm:
        pipeline.learn_one(x, y)
    ratios, differ = [], 0
    for r in range(reps):
        xs = rest[r * batch:(r + 1) * batch]
        start = time.thread_time()
        one = [pipeline.predict_proba_one(x)[True] for x in xs]
        mid = time.thread_time()
        many = pipeline.predict_proba_many(pd.DataFrame(xs))[True].tolist()
        ratios.append((time.thread_time() - mid) / (mid - start))
        differ += sum(a != b for a, b in zip(one, many))
    ratios.sort()
    print(f"pipeline of examples/categorical_pipeline.py, batches of {batch}: predict_proba_many "
          f"time / predict_proba_one loop time {ratios[0]:.2f}/{statistics.median(ratios):.2f}/"
          f"{ratios[-1]:.2f}x (min/median/max of {reps}); probabilities that differ: {differ} "
          f"of {batch * reps}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of each stream")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--pipeline-batch", action="store_true",
                        help="River's predict_many for a pipeline vs a predict_one loop")
    args = parser.parse_args(argv)
    if args.pipeline_batch:
        pipeline_batch(max(args.reps, 20))
        return
    scale = 10 if args.quick else 1
    data = {"categorical": lambda: streams.categorical(20_000 // scale)}
    if (shared_folder() / "elec2").is_dir():
        data["elec2-categorical"] = lambda: streams.elec2_categorical()[: 45_312 // scale]
    else:
        print(f"elec2-categorical skipped: no shared data at {shared_folder()}")
    print(f"predict_one + learn_one per event, PA-I, {args.reps} interleaved repetitions, CPU "
          "time; ratio = river time / ours (min/median/max)")
    for name, make_stream in data.items():
        stream = make_stream()
        for n_features in (None, 2**20):
            make = systems(n_features)
            accuracy = check_identical(name, stream, make)
            times = {system: [] for system in make}
            for _ in range(args.reps):
                for system, factory in make.items():
                    times[system].append(streams.progressive_seconds(
                        factory(), stream, clock=time.thread_time))
            rate = {s: len(stream) / statistics.median(t) for s, t in times.items()}
            ratios = sorted(a / b for a, b in zip(times["river"], times["ours"]))
            index = "vocabulary" if n_features is None else "hashed 2^20"
            print(f"  {name:18s} {index:11s} accuracy {accuracy:.4f} (both) | ours "
                  f"{rate['ours']:>9,.0f}/s ({statistics.median(times['ours']):.2f} s CPU) | "
                  f"river {rate['river']:>8,.0f}/s ({statistics.median(times['river']):.2f} s "
                  f"CPU) | {ratios[0]:.2f}/{statistics.median(ratios):.2f}/{ratios[-1]:.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
