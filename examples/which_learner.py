"""The figures behind README's "which learner when" guide, on the shared data.

Every figure is one progressive-validation pass (predict, then learn) in file order, default
parameters unless a row says otherwise, no feature scaling unless a row says so:

1. scaled vs raw: elec2 (45,312 x 6, features in [0, 1]) and a "raw" copy of it whose j-th
   feature is multiplied by 10^j (scales 1 to 100,000: what unscaled sensors look like);
   accuracy and the mean hinge loss max(0, 1 - y m) of the margin m.
2. drifting vs stationary: elec2 (prices and demand drift) against a9a (32,561 x 123, census
   records, stationary), accuracy of the PA learners and of the parameter-free ones.
3. tuning: PAClassifier's accuracy over C in {0.001, 0.01, 0.1, 1, 10} on both, against the
   untuned parameter-free learners.
4. sparse and wide: a9a through the hashing trick (2^10 to 2^18 positions) against the
   vocabulary: accuracy and the size of the pickled model.
5. dense, non-linear: USPS (7,291 x 256, x' = 2x - 1), the linear multiclass PA against the
   kernel PA ((x . v)^3, C = 100) with and without a budget: error, memory, time.

Run: ``python examples/which_learner.py [--quick] [--out DIR]`` (--quick: the first 5,000
events of each set; the tables also go to DIR/which_learner.json, DIR defaults to out).

"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

from river import metrics, stats

import river_pa
from river_pa.evaluate.datasets import load

CS = (0.001, 0.01, 0.1, 1.0, 10.0)
SCALES = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
PARAM_FREE = {
    "RescaledExpClassifier": river_pa.RescaledExpClassifier,
    "CoordinateScaleInvariant": river_pa.CoordinateScaleInvariantClassifier,
    "FullScaleInvariant": river_pa.FullScaleInvariantClassifier,
}


def events(name: str, n: int | None) -> list:
    data = load(name)
    return [(x, bool(y)) for x, y in zip(data.x[:n], data.y[:n])]


def rescaled(rows: list) -> list:
    """The raw copy: feature j multiplied by SCALES[j]."""
    keys = list(rows[0][0])
    scale = dict(zip(keys, SCALES))
    return [({k: v * scale[k] for k, v in x.items()}, y) for x, y in rows]


def accuracy(rows: list, model) -> float:
    """Progressive accuracy (%) of one pass."""
    metric = metrics.Accuracy()
    for x, y in rows:
        metric.update(y, model.predict_one(x))
        model.learn_one(x, y)
    return 100 * metric.get()


def hinge(rows: list, model) -> tuple[float, float]:
    """(progressive accuracy %, mean hinge loss of the margin) of one pass."""
    metric, loss = metrics.Accuracy(), stats.Mean()
    for x, y in rows:
        m = model.decision_function_one(x)
        metric.update(y, m > 0.0)
        loss.update(max(0.0, 1.0 - m if y else 1.0 + m))
        model.learn_one(x, y)
    return 100 * metric.get(), loss.get()


def scale_table(elec: list) -> dict:
    """{learner: (accuracy, hinge on elec2, accuracy, hinge on the raw copy)}."""
    raw = rescaled(elec)
    learners = {"PAClassifier()": river_pa.PAClassifier, **PARAM_FREE}
    return {name: (*hinge(elec, make()), *hinge(raw, make())) for name, make in learners.items()}


def drift_table(elec: list, a9a: list) -> dict:
    """{learner: (accuracy on elec2, on a9a)}: C sweeps of PA-I and the parameter-free ones."""
    out = {f"PAClassifier(C={c:g})": (accuracy(elec, river_pa.PAClassifier(C=c)),
                                      accuracy(a9a, river_pa.PAClassifier(C=c))) for c in CS}
    for name, make in PARAM_FREE.items():
        out[name] = accuracy(elec, make()), accuracy(a9a, make())
    return out


def hashing_table(a9a: list) -> dict:
    """{n_features: (accuracy, pickled bytes)} of PAClassifier(C=0.01) on a9a."""
    out = {}
    for bits in (None, 10, 14, 18):
        model = river_pa.PAClassifier(C=0.01, n_features=None if bits is None else 2**bits)
        out["vocabulary" if bits is None else f"2^{bits}"] = (accuracy(a9a, model),
                                                              len(pickle.dumps(model)))
    return out


def kernel_table(n: int | None) -> dict:
    """{learner: (error %, support vectors, pickled MB, seconds)} on USPS, (x.v)^3, C = 100."""
    data = load("usps")  # features in [0, 1], zeros left out: x' = 2 x - 1 as in usps_multiclass
    keys = sorted({k for x in data.x for k in x})
    rows = [({k: 2.0 * x.get(k, 0.0) - 1.0 for k in keys}, y)
            for x, y in zip(data.x[:n], data.y[:n])]
    out = {}
    learners = {
        "linear PAMultiClassifier()": river_pa.PAMultiClassifier(),
        "no budget": river_pa.KernelPAClassifier(kernel="poly", degree=3, C=100.0),
        "budget 500 (projectron)": river_pa.KernelPAClassifier(kernel="poly", degree=3, C=100.0,
                                                               budget=500),
    }
    for name, model in learners.items():
        start = time.perf_counter()
        error = 100 - accuracy(rows, model)
        seconds = time.perf_counter() - start
        n_sv = getattr(model, "n_support", 0)
        out[name] = (error, n_sv, len(pickle.dumps(model)) / 2**20, seconds)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 5,000 events of each set")
    parser.add_argument("--out", type=Path, default=Path("out"),
                        help="folder the tables go to, as which_learner.json (default: out)")
    args = parser.parse_args(argv)
    n = 5000 if args.quick else None
    elec, a9a = events("elec2", n), events("a9a", n)
    tables = {
        "scale": scale_table(elec),
        "drift": drift_table(elec, a9a),
        "hashing": hashing_table(a9a),
        "kernel": kernel_table(n),
    }
    print(f"1. elec2 as given: accuracy %, mean hinge; raw copy (scales {SCALES}): the same")
    for name, (a, h, b, g) in tables["scale"].items():
        print(f"   {name:<28}{a:8.2f}{h:9.3f}{b:8.2f}{g:9.3f}")
    print("2-3. accuracy %, elec2 (drifting) / a9a (stationary)")
    for name, (a, b) in tables["drift"].items():
        print(f"   {name:<28}{a:8.2f}{b:8.2f}")
    print("4. a9a, PAClassifier(C=0.01): accuracy %, pickled bytes")
    for name, (a, size) in tables["hashing"].items():
        print(f"   {name:<28}{a:8.2f}{size:>10}")
    print("5. USPS: error %, support vectors, pickled MiB, seconds")
    for name, (e, n_sv, mb, s) in tables["kernel"].items():
        print(f"   {name:<28}{e:8.2f}{n_sv:>7}{mb:8.1f}{s:8.1f}")
    path = args.out / "which_learner.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tables, indent=1))
    print(f"tables: {path}")
    return tables


if __name__ == "__main__":
    main()
