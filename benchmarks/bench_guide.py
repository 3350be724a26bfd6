"""README's "Which learner when", re-measured across sets and orders (issue 19).

Binary (accuracy, progressive validation): the stationary shared sets a9a (its first 10,000
events of each order), phishing and mushrooms, features as stored (already in [0, 1] or
binary), in file order and `--shuffles` seeded shuffles; elec2 (drifting) in file order only,
since a shuffle removes its drift. Regression (R^2 and MAE, River's `StandardScaler` in front of
every learner): abalone, cadata (first 5,000 events of each order) and scikit-learn's diabetes,
same orders; the running mean of the target is the floor (R^2 about 0).

Prints, per set and learner, the mean and standard deviation over the orders and the range.

Raw units (`--part raw`): the binary sets as stored and with feature j multiplied by
10^(j mod 6), same orders (elec2 in file order only): accuracy of each and the fraction of
events predicted alike.

Hashing (`--part hashed`): `PAClassifier(C=0.01)` with a vocabulary and hashed to 2^6 to
2^18 positions on the stationary sets, same orders.

Drift (`--part drift`): three streams with a known concept drift from River's generators (SEA
and Agrawal switched half-way, a rotating hyperplane), `--shuffles` + 1 seeds each.

Run: ``python benchmarks/bench_guide.py [--shuffles 4]
[--part binary|raw|hashed|drift|regression|both]`` (`both`, the default, runs every part:
about 20 minutes on one core, most of it `FullScaleInvariant*`, O(d^2) per event).

"""

from __future__ import annotations

import argparse
import gzip

import numpy as np
from river import linear_model, metrics, preprocessing, stats
from sklearn.datasets import load_diabetes, load_svmlight_file

import river_pa
from river_pa.evaluate.datasets import shared_folder

BINARY = {
    "PAClassifier(C=0.01)": lambda: river_pa.PAClassifier(C=0.01),
    "PAClassifier(C=0.1)": lambda: river_pa.PAClassifier(C=0.1),
    "PAClassifier(C=1)": lambda: river_pa.PAClassifier(C=1.0),
    "FullScaleInvariantClassifier()": lambda: river_pa.FullScaleInvariantClassifier(),
    "CoordinateScaleInvariantClassifier()": lambda: river_pa.CoordinateScaleInvariantClassifier(),
    "RescaledExpClassifier()": lambda: river_pa.RescaledExpClassifier(),
    "river LogisticRegression()": lambda: linear_model.LogisticRegression(),
}
REGRESSION = {
    "PARegressor()": lambda: river_pa.PARegressor(),
    "FullScaleInvariantRegressor()": lambda: river_pa.FullScaleInvariantRegressor(),
    "CoordinateScaleInvariantRegressor()": lambda: river_pa.CoordinateScaleInvariantRegressor(),
    "RescaledExpRegressor()": lambda: river_pa.RescaledExpRegressor(),
    "river LinearRegression()": lambda: linear_model.LinearRegression(),
}


class RunningMean:
    """Predicts the mean of the targets seen so far: the floor of a regressor."""

    def __init__(self):
        self.mean = stats.Mean()

    def predict_one(self, x):
        return self.mean.get()

    def learn_one(self, x, y):
        self.mean.update(y)


def libsvm(name: str, n: int | None = None):
    X, y = load_svmlight_file(str(shared_folder() / name / f"{name}.bz2"))
    return X.toarray(), y == y.max(), n


def binary_sets() -> dict:
    with gzip.open(shared_folder() / "elec2" / "elec.csv.gz", "rt") as f:
        elec = np.genfromtxt(f, delimiter=",", skip_header=1)
    return {"a9a": libsvm("a9a", 10_000), "phishing": libsvm("phishing"),
            "mushrooms": libsvm("mushrooms"), "elec2 (drifting)": (elec[:, :-1], elec[:, -1] == 1,
                                                                   None)}


RAW = ("PAClassifier(C=1)", "FullScaleInvariantClassifier()",
       "CoordinateScaleInvariantClassifier()", "RescaledExpClassifier()")


def run_raw(sets: dict, learners: dict, shuffles: int) -> None:
    """Each learner on each set as stored and with feature j multiplied by 10^(j mod 6) (1 to
    100,000): accuracy of both, and the fraction of events predicted alike (1 for a learner
    whose predictions do not depend on the units)."""
    for name, (X, y, n) in sets.items():
        scale = 10.0 ** (np.arange(X.shape[1]) % 6)
        runs = {learner: [] for learner in RAW}
        for idx in orders(X, n, name, shuffles):
            for learner in RAW:
                plain, raw = (np.array([bool(p) for p in predictions(
                    learners[learner](), Z, y[idx])]) for Z in (X[idx], X[idx] * scale))
                runs[learner].append((np.mean(plain == y[idx]), np.mean(raw == y[idx]),
                                      np.mean(plain == raw)))
        report(f"{name}: {len(idx)} events; accuracy as stored, rescaled, predicted alike; "
               f"{len(runs[RAW[0]])} orders", runs)


HASHED = {f"PAClassifier(C=0.01, n_features={n})": (lambda n: lambda: river_pa.PAClassifier(
    C=0.01, n_features=n))(n) for n in (None, 2**6, 2**10, 2**14, 2**18)}


def run_hashed(sets: dict, shuffles: int) -> None:
    """`PAClassifier(C=0.01)` with a vocabulary (None) and hashed to 2^6 .. 2^18 positions:
    accuracy on the stationary sets (feature keys are the column numbers)."""
    run({k: v for k, v in sets.items() if "drifting" not in k}, HASHED, shuffles,
        regression=False)


def drift_streams() -> dict:
    """Streams with a known concept drift, from River's generators, one per seed (10,000
    events; River's StandardScaler in front of every learner, as Agrawal's salaries run to
    1.5e5): SEA's concept switched at event 5,000 (variant 0 to 2; River's sigmoid switch of
    width 100: it overflows below), Agrawal's classification function switched at 5,000 (0 to
    2), and a rotating hyperplane (5 of 10 weights moving by 0.001 per event, 5% label
    noise)."""
    from river.datasets import synth

    def switched(make, a, b):
        return lambda seed: synth.ConceptDriftStream(make(seed, a), make(seed, b), seed=seed,
                                                     position=5_000, width=100)

    return {
        "SEA, switched at 5,000": switched(lambda s, v: synth.SEA(variant=v, seed=s), 0, 2),
        "Agrawal, switched at 5,000": switched(
            lambda s, f: synth.Agrawal(classification_function=f, seed=s), 0, 2),
        "rotating hyperplane": lambda seed: synth.Hyperplane(
            seed=seed, n_features=10, n_drift_features=5, mag_change=0.001,
            noise_percentage=0.05),
    }


def run_drift(learners: dict, seeds: int) -> None:
    for name, make_stream in drift_streams().items():
        runs = {learner: [] for learner in learners}
        for seed in range(seeds):
            rows = list(make_stream(seed).take(10_000))
            keys = sorted(rows[0][0])
            X = np.array([[x[k] for k in keys] for x, _ in rows], dtype=float)
            y = np.array([bool(t) for _, t in rows])
            for learner, make in learners.items():
                model = preprocessing.StandardScaler() | make()
                runs[learner].append(progressive(model, X, y, False))
        report(f"{name}: 10,000 events x {len(keys)} features, {seeds} seeds", runs)


def report(title: str, runs: dict) -> None:
    print(f"\n{title}")
    for learner, r in runs.items():
        r = np.array(r)
        cols = [f"{r[:, k].mean():>9.4f} ±{r[:, k].std():.4f} [{r[:, k].min():.4f}, "
                f"{r[:, k].max():.4f}]" for k in range(r.shape[1])]
        print(f"{learner:<40}" + "  ".join(cols), flush=True)


def regression_sets() -> dict:
    X, y = load_svmlight_file(str(shared_folder() / "abalone" / "abalone_scale.bz2"))
    with gzip.open(shared_folder() / "cadata" / "cal_housing.csv.gz", "rt") as f:
        cal = np.genfromtxt(f, delimiter=",", skip_header=1)
    diabetes = load_diabetes()
    return {"abalone": (X.toarray(), y, None), "cadata": (cal[:, :-1], cal[:, -1], 5_000),
            "diabetes": (diabetes.data, diabetes.target, None)}


def predictions(model, X, y) -> list:
    """`model`'s progressive predictions on the rows of X, learning y after each."""
    out = []
    for row, target in zip(X.tolist(), y.tolist()):
        x = dict(enumerate(row))
        out.append(model.predict_one(x))
        model.learn_one(x, target)
    return out


def progressive(model, X, y, regression: bool) -> tuple:
    m = [metrics.R2(), metrics.MAE()] if regression else [metrics.Accuracy()]
    for target, p in zip(y.tolist(), predictions(model, X, y)):
        for metric in m:
            metric.update(target, p)
    return tuple(metric.get() for metric in m)


def orders(X, n: int | None, name: str, shuffles: int) -> list:
    """The row orders a set runs in, each cut to its first n rows: the file order, then
    `shuffles` seeded shuffles (a drifting set in file order only: a shuffle removes its
    drift)."""
    count = 1 if "drifting" in name else shuffles + 1
    return [(np.arange(len(X)) if o == 0 else np.random.default_rng(o).permutation(len(X)))[:n]
            for o in range(count)]


def run(sets: dict, learners: dict, shuffles: int, regression: bool) -> None:
    for name, (X, y, n) in sets.items():
        runs = {learner: [] for learner in learners}
        if regression:
            runs["running mean"] = []
        for idx in orders(X, n, name, shuffles):
            for learner, make in learners.items():
                model = preprocessing.StandardScaler() | make() if regression else make()
                runs[learner].append(progressive(model, X[idx], y[idx], regression))
            if regression:
                runs["running mean"].append(progressive(RunningMean(), X[idx], y[idx], True))
        report(f"{name}: {len(idx)} events x {X.shape[1]} features, "
               f"{len(runs[next(iter(learners))])} orders", runs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shuffles", type=int, default=4)
    parser.add_argument("--part", choices=["binary", "raw", "hashed", "drift", "regression",
                                           "both"],
                        default="both")
    args = parser.parse_args(argv)
    binary = binary_sets() if args.part in ("binary", "raw", "hashed", "both") else {}
    if args.part in ("binary", "both"):
        print("binary: accuracy, mean ± sd [min, max] over the orders")
        run(binary, BINARY, args.shuffles, regression=False)
    if args.part in ("raw", "both"):
        print("\nraw units: mean ± sd [min, max] over the orders")
        run_raw(binary, BINARY, args.shuffles)
    if args.part in ("hashed", "both"):
        print("\nhashing trick: accuracy, mean ± sd [min, max] over the orders")
        run_hashed(binary, args.shuffles)
    if args.part in ("drift", "both"):
        print("\ndrifting streams: accuracy, mean ± sd [min, max] over the seeds")
        run_drift(BINARY, args.shuffles + 1)
    if args.part in ("regression", "both"):
        print("\nregression: R^2 then MAE, mean ± sd [min, max] over the orders")
        run(regression_sets(), REGRESSION, args.shuffles, regression=True)


if __name__ == "__main__":
    main()
