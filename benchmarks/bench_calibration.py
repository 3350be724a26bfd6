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
maps of scikit-learn's `CalibratedClassifierCV`, and River's `LogisticRegression()` on the
same stream. Prints one line per run, then per set (and over all): the spread of calibrated /
uncalibrated LogLoss, the runs where calibration is worse by more than 1%, the runs whose ECE
ends at most 0.03 among those where the uncalibrated ECE is above, the median ECE and LogLoss
beside the anchors, the events where P(True) > 1/2 disagrees with `predict_one` (0: no
label changes), and the median ECE a perfectly calibrated forecaster would show with the same
probabilities on as many events (labels drawn from them: the sampling noise of the set's
size). Held-out sets: ``--sets phishing-full,bananas,a9a-test``.

Multiclass (``--multiclass``): the same grid for `PAMultiClassifier` on River's
ImageSegments (StandardScaler fitted on the whole set in front), scikit-learn's digits, USPS
and mnist-5k (its first 2,000 events): progressive cross-entropy (the true label's
probability clipped at 1e-15, as River's CrossEntropy) and 10-bin top-label ECE of the softmax
link and of `calibration="temperature"` (the same scores: calibration changes no prediction),
beside in-sample batch anchors on the same progressive scores (one-vs-rest Platt sigmoids and
isotonic maps normalised over the labels seen, as scikit-learn's `CalibratedClassifierCV`
does, and one temperature fitted to the whole pass) and River's `SoftmaxRegression()` on
the same stream.

Run: ``python benchmarks/bench_calibration.py [--rounds 5]``,
``python benchmarks/bench_calibration.py --quality [--shuffles 10] [--sets a9a,elec2]`` or
``python benchmarks/bench_calibration.py --multiclass [--shuffles 10]``
(the full table replays 9.6 million margins through the calibrator: minutes of CPU; `--sets`
splits it, e.g. into parallel runs). Timings on a shared machine are noisy:
read the ratios.

"""

from __future__ import annotations

import argparse
import random
import statistics

import numpy as np
from river import datasets, linear_model, metrics

import river_pa

LEARNERS = {
    "PAClassifier()": lambda: river_pa.PAClassifier(),
    "PAClassifier(calibration='temperature')":
        lambda: river_pa.PAClassifier(calibration="temperature"),
    "river LogisticRegression()": lambda: linear_model.LogisticRegression(),
}
SETS = ["phishing", "a9a", "elec2", "mushrooms"]


def events_per_s(model, events) -> float:
    from streams import progressive_seconds  # benchmarks/ on the path: run as a script

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


def noise_floor(p: np.ndarray, seed: int, draws: int = 20) -> float:
    """The ECE a perfectly calibrated forecaster shows with the same probabilities on as many
    events: the median over `draws` of `ece(p, y)` with each y drawn from Bernoulli(p). A
    target below it is within the sampling noise of the set's size."""
    rng = np.random.default_rng(seed)
    return float(np.median([ece(p, (rng.random(len(p)) < p).astype(float))
                            for _ in range(draws)]))


def river_loss(events, model=None, loss=None) -> float:
    """Progressive `loss` of the River `model`: by default the LogLoss of River's
    `LogisticRegression()`, the anchor of issue 19."""
    model = model or linear_model.LogisticRegression()
    loss = loss or metrics.LogLoss()
    for x, y in events:
        loss.update(y, model.predict_proba_one(x))
        model.learn_one(x, y)
    return loss.get()


def anchors(m: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """In-sample LogLoss of Platt's sigmoid and of isotonic regression on the margins."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    platt = LogisticRegression(C=1e6).fit(m[:, None], y).predict_proba(m[:, None])[:, 1]
    iso = IsotonicRegression(out_of_bounds="clip").fit(m, y)
    return log_loss(platt, y), log_loss(iso.predict(m), y)


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    """Mean log loss of P(True) = p, clipped to [1e-15, 1 - 1e-15] as River's LogLoss."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(np.where(y > 0, np.log(p), np.log1p(-p))))


def calibrated(margins: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(True) of `calibration="temperature"` on progressive margins: the calibrator a
    calibrated `PAClassifier` holds, fed what its `predict_proba_one` and `learn_one` feed it."""
    from river_pa._core.calibration import make_calibrator

    cal, p = make_calibrator("temperature", binary=True), np.empty(len(margins))
    for i, (m, label) in enumerate(zip(margins.tolist(), (y > 0).tolist())):
        p[i] = cal.proba(m)
        cal.learn(m, label)
    return p


def quality(shuffles: int, names: list[str]) -> list[dict]:
    """Issue 19's runs. The margins come from `progressive_csr` (bit for bit those of a
    `predict_one`/`learn_one` loop, and calibration does not change them), the calibrated
    probabilities from `calibrated`: the learner's own loop with calibration on is
    tests/_core/test_calibration.py's."""
    import scipy.sparse

    from river_pa.evaluate.datasets import load

    rows = []
    for name in names:
        csr = load(name).csr
        d = int(csr.indices.max()) + 1
        X = scipy.sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=(len(csr), d))
        keys = range(d) if csr.keys is None else csr.keys
        for order in range(shuffles + 1):
            perm = list(range(len(csr)))
            if order:
                random.Random(order).shuffle(perm)  # = shuffling the list of events
            Xo, y = X[perm], (np.asarray(csr.y)[perm] > 0).astype(float)
            stream = [({keys[j]: v for j, v in zip(Xo.indices[lo:hi], Xo.data[lo:hi])},
                       label > 0) for lo, hi, label in zip(Xo.indptr[:-1], Xo.indptr[1:], y)]
            river = river_loss(stream)
            for C in (0.01, 0.1, 1.0):
                for variant in ("PA", "PA-I", "PA-II"):
                    m = river_pa.PAClassifier(C=C, variant=variant).progressive_csr(
                        Xo.indptr, Xo.indices, Xo.data, y > 0, keys)
                    p_raw, p_cal = 1 / (1 + np.exp(-m)), calibrated(m, y)
                    raw = log_loss(p_raw, y), ece(p_raw, y)
                    cal = log_loss(p_cal, y), ece(p_cal, y)
                    platt, iso = anchors(m, y)
                    rows.append({"set": name, "order": order, "C": C, "variant": variant,
                                 "raw": raw, "cal": cal, "platt": platt, "iso": iso,
                                 "river": river, "flips": int(((p_cal > 0.5) != (m > 0)).sum()),
                                 "floor": noise_floor(p_cal, order)})
                    print(f"{name:10} order {order:2} C={C:<5} {variant:6} LogLoss "
                          f"{raw[0]:.4f} -> {cal[0]:.4f} (Platt {platt:.4f}, isotonic "
                          f"{iso:.4f})  ECE {raw[1]:.4f} -> {cal[1]:.4f}", flush=True)
    summary(rows)
    return rows


def summary(rows: list[dict], loss: str = "LogLoss", anchors: dict | None = None,
            flips: str = "P>1/2 != predict_one") -> None:
    """Issue 19's table: per set, calibrated / uncalibrated `loss` (min / median / max), the
    runs worse by more than 1%, the runs with ECE <= 0.03 among those whose uncalibrated ECE
    is above, median ECE and loss beside the `anchors` (row key: name; medians over the
    runs), the events counted in `flips`, and the ECE a perfect forecaster shows."""
    anchors = anchors or {"platt": "Platt", "iso": "isotonic", "river": "River LR"}
    head = [f"{'set':13}", "runs", f"{loss} ratio min / median / max", ">1% worse",
            "ECE<=0.03 met/eligible", "median ECE raw -> cal",
            f"median {loss} raw -> cal ({', '.join(anchors.values())})", flips,
            "ECE of a perfect forecaster"]
    print("\n" + "  ".join(head))
    for name in list(dict.fromkeys(r["set"] for r in rows)) + ["all"]:
        mine = [r for r in rows if name in ("all", r["set"])]
        ratios = [r["cal"][0] / r["raw"][0] for r in mine]
        q = np.quantile(ratios, [0, 0.5, 1])
        eligible = [r for r in mine if r["raw"][1] > 0.03]
        med = lambda f: statistics.median(f(r) for r in mine)  # noqa: E731
        anchored = ", ".join(f"{med(lambda r, k=k: r[k]):.4f}" for k in anchors)
        cells = [name, len(mine), f"{q[0]:.4f} / {q[1]:.4f} / {q[2]:.4f}",
                 sum(x > 1.01 for x in ratios),
                 f"{sum(r['cal'][1] <= 0.03 for r in eligible)} / {len(eligible)}",
                 f"{med(lambda r: r['raw'][1]):.4f} -> {med(lambda r: r['cal'][1]):.4f}",
                 f"{med(lambda r: r['raw'][0]):.4f} -> {med(lambda r: r['cal'][0]):.4f} "
                 f"({anchored})", sum(r["flips"] for r in mine),
                 f"{med(lambda r: r['floor']):.4f}"]
        print("  ".join(f"{cell!s:<{len(h)}}" for cell, h in zip(cells, head)).rstrip())


MULTICLASS_SETS = ["ImageSegments", "digits", "usps", "mnist-5k"]


def multiclass_set(name: str) -> list:
    """The events of a multiclass set in file order: (feature dict, label)."""
    if name == "ImageSegments":
        from river import preprocessing

        events = list(datasets.ImageSegments())
        scaler = preprocessing.StandardScaler()
        for x, _ in events:
            scaler.learn_one(x)
        return [(scaler.transform_one(x), y) for x, y in events]
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        X = X / 16.0
    else:
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
        from kernel_budget import load_mnist, load_usps

        X, y = load_usps() if name == "usps" else load_mnist(2000)
    return [(dict(enumerate(row)), int(label)) for row, label in zip(X.tolist(), y.tolist())]


def top_label_ece(P: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """ECE of the top label's probability (its confidence) against its accuracy."""
    return ece(P.max(axis=1), (P.argmax(axis=1) == y).astype(float), bins)


def top_label_noise_floor(P: np.ndarray, seed: int, draws: int = 20) -> float:
    """`noise_floor` of the top-label ECE: labels drawn from the rows of P."""
    rng, cum = np.random.default_rng(seed), np.cumsum(P, axis=1)
    draw = lambda: (cum < rng.random((len(P), 1)) * cum[:, -1:]).sum(axis=1)  # noqa: E731
    return float(np.median([top_label_ece(P, np.minimum(draw(), P.shape[1] - 1))
                            for _ in range(draws)]))


def cross_entropy(P: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(P[np.arange(len(y)), y], 1e-15, 1.0))))


def multiclass_pass(events, C, variant):
    """Progressive scores (labels in order of first appearance; -inf for a label not seen
    yet), the calibrated probabilities and the label rows of one pass."""
    labels = list(dict.fromkeys(y for _, y in events))
    row = {label: r for r, label in enumerate(labels)}
    model = river_pa.PAMultiClassifier(C=C, variant=variant, calibration="temperature")
    S = np.full((len(events), len(labels)), -np.inf)
    P = np.zeros((len(events), len(labels)))
    for i, (x, y) in enumerate(events):
        for label, score in model.decision_function_one(x).items():
            S[i, row[label]] = score
        for label, p in model.predict_proba_one(x).items():
            P[i, row[label]] = p
        model.learn_one(x, y)
    return S, P, np.array([row[y] for _, y in events])


def disagreements(P: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Events whose probabilities put `predict_one`'s label (the argmax of the scores, the
    first of a tie) strictly below another's; a tie of probabilities (scores 1 ulp apart can
    round to one) is no disagreement."""
    chosen = P[np.arange(len(P)), S.argmax(axis=1)]
    return chosen < P.max(axis=1)


def softmax_rows(S: np.ndarray, a: float = 1.0) -> np.ndarray:
    """softmax(a s) over the labels seen (finite scores); uniform over none: the first event."""
    Z = np.where(np.isfinite(S), a * S, -np.inf)
    top = Z.max(axis=1, keepdims=True)
    E = np.exp(Z - np.where(np.isfinite(top), top, 0.0))
    total = E.sum(axis=1, keepdims=True)
    return np.where(total > 0, E / np.where(total > 0, total, 1.0), 0.0)


def multiclass_anchors(S: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """In-sample cross-entropy of one-vs-rest Platt sigmoids and isotonic maps normalised
    over the labels seen (CalibratedClassifierCV's multiclass rule), and of the best single
    temperature."""
    from scipy.optimize import minimize_scalar
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    seen = np.isfinite(S)
    maps = []
    for k in range(S.shape[1]):
        rows, target = seen[:, k], (y == k).astype(float)
        s = S[rows, k]
        platt, iso = np.zeros(len(y)), np.zeros(len(y))
        if 0 < target[rows].sum() < rows.sum():
            platt[rows] = LogisticRegression(C=1e6).fit(s[:, None], target[rows]).predict_proba(
                s[:, None])[:, 1]
            iso[rows] = IsotonicRegression(out_of_bounds="clip").fit(s, target[rows]).predict(s)
        maps.append((platt, iso))
    out = []
    for which in (0, 1):
        Q = np.column_stack([m[which] for m in maps])
        total = Q.sum(axis=1, keepdims=True)
        n_seen = np.maximum(seen.sum(axis=1, keepdims=True), 1)
        Q = np.where(total > 0, Q / np.where(total > 0, total, 1.0), seen / n_seen)
        out.append(cross_entropy(Q, y))
    best = minimize_scalar(lambda t: cross_entropy(softmax_rows(S, np.exp(t)), y),
                           bounds=(-12.0, 6.0), method="bounded")
    return out[0], out[1], float(best.fun)


def multiclass_quality(shuffles: int, names: list[str]) -> list[dict]:
    rows = []
    for name in names:
        base = multiclass_set(name)
        for order in range(shuffles + 1):
            events = list(base)
            if order:
                random.Random(order).shuffle(events)
            river = river_loss(events, linear_model.SoftmaxRegression(),
                               metrics.CrossEntropy())
            for C in (0.01, 0.1, 1.0):
                for variant in ("PA", "PA-I", "PA-II"):
                    S, P_cal, y = multiclass_pass(events, C, variant)
                    P_raw = softmax_rows(S)
                    raw = cross_entropy(P_raw, y), top_label_ece(P_raw, y)
                    cal = cross_entropy(P_cal, y), top_label_ece(P_cal, y)
                    platt, iso, temperature = multiclass_anchors(S, y)
                    flips = int(disagreements(P_cal, S).sum())
                    rows.append({"set": name, "order": order, "C": C, "variant": variant,
                                 "raw": raw, "cal": cal, "platt": platt, "iso": iso,
                                 "temperature": temperature, "river": river, "flips": flips,
                                 "floor": top_label_noise_floor(P_cal, order)})
                    print(f"{name:13} order {order:2} C={C:<5} {variant:6} cross-entropy "
                          f"{raw[0]:.4f} -> {cal[0]:.4f} (Platt {platt:.4f}, isotonic "
                          f"{iso:.4f}, one temperature {temperature:.4f})  ECE {raw[1]:.4f} -> "
                          f"{cal[1]:.4f}", flush=True)
    summary(rows, "cross-entropy", {"platt": "Platt", "iso": "isotonic",
                                     "temperature": "one temperature",
                                     "river": "River SoftmaxRegression"},
            "P argmax != predict_one")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--shuffles", type=int, default=10)
    parser.add_argument("--sets", default=None, help="default: the binary or multiclass sets")
    parser.add_argument("--multiclass", action="store_true")
    args = parser.parse_args(argv)
    if args.multiclass:
        sets = args.sets or ",".join(MULTICLASS_SETS)
        return multiclass_quality(args.shuffles, sets.split(","))
    if args.quality:
        return quality(args.shuffles, (args.sets or ",".join(SETS)).split(","))
    return speed(args.rounds)


if __name__ == "__main__":
    main()
