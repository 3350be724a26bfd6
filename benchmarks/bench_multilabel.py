"""`PAMultiLabelClassifier`'s default against River's `ClassifierChain(LogisticRegression())`.

Issue 19's table: progressive validation (predict_one then learn_one), River's
`StandardScaler` in front of every learner, on the shared emotions set (593 events, 72
features, 6 labels), River's bundled Yeast (its first 1,000 events: 103 features, 14 labels)
and four `sklearn.datasets.make_multilabel_classification` streams (1,500 events, 20 count
features, 6 labels; seeds 1-4 with on average 2, 1, 4 and 3 labels per event), each in file
order and in `--shuffles` seeded shuffles. For every learner: Hamming loss and example-based F1
(mean and standard deviation over the orders), the ratio of its mean Hamming loss to the
chain's, in how many orders its Hamming loss is below the chain's and its F1 at least the
chain's. The running per-label majority is the floor.

Run: ``python benchmarks/bench_multilabel.py [--shuffles 10] [--sets emotions,yeast]``
(the full table takes about 15 minutes on one core, most of it River's chain).

"""

from __future__ import annotations

import argparse
import gzip
import io

import numpy as np
from river import datasets, linear_model, multioutput, preprocessing

import river_pa
from river_pa.evaluate.datasets import shared_folder

SYNTHETIC = {"synthetic-1-2": (1, 2), "synthetic-2-1": (2, 1), "synthetic-3-4": (3, 4),
             "synthetic-4-3": (4, 3)}
SETS = ["emotions", "yeast", *SYNTHETIC]
LEARNERS = {
    "ClassifierChain(LogisticRegression())": lambda order: multioutput.ClassifierChain(
        linear_model.LogisticRegression(), order=order),
    "PAMultiLabelClassifier()": lambda order: river_pa.PAMultiLabelClassifier(),
    "former default: C=0.03 (3 chains)": lambda order: river_pa.PAMultiLabelClassifier(C=0.03),
    "one chain (chains=1)": lambda order: river_pa.PAMultiLabelClassifier(chains=1),
    "chain, not averaged": lambda order: river_pa.PAMultiLabelClassifier(average=False),
    "threshold (no chain), averaged": lambda order: river_pa.PAMultiLabelClassifier(
        rule="threshold"),
    "chain, averaged, intercept_scale=1": lambda order: river_pa.PAMultiLabelClassifier(
        intercept_scale=1.0),
    "old default: threshold, C=0.01, not averaged, scale 1": lambda order: (
        river_pa.PAMultiLabelClassifier(rule="threshold", C=0.01, average=False,
                                        intercept_scale=1.0)),
    "ranking, C=1, not averaged": lambda order: river_pa.PAMultiLabelClassifier(
        rule="ranking", C=1.0, average=False),
}
ANCHOR = "ClassifierChain(LogisticRegression())"


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y) of a set: float features, bool labels (rows x labels)."""
    if name == "emotions":
        from scipy.io import arff

        with gzip.open(shared_folder() / "emotions" / "emotions.arff.gz", "rt") as f:
            data, meta = arff.loadarff(io.StringIO(f.read()))
        labels, features = meta.names()[:6], meta.names()[6:]
        return (np.array([[float(r[k]) for k in features] for r in data]),
                np.array([[r[k] == b"1" for k in labels] for r in data]))
    if name == "yeast":
        rows = list(datasets.Yeast())[:1000]
        return (np.array([list(x.values()) for x, _ in rows], dtype=float),
                np.array([[bool(v) for v in y.values()] for _, y in rows]))
    from sklearn.datasets import make_multilabel_classification

    seed, n_labels = SYNTHETIC[name]
    X, Y = make_multilabel_classification(n_samples=1500, n_features=20, n_classes=6,
                                          n_labels=n_labels, random_state=seed)
    return X.astype(float), Y.astype(bool)


def scores(Y: np.ndarray, P: np.ndarray) -> tuple[float, float]:
    """(Hamming loss, example-based F1; an event with no true and no predicted label counts 1)."""
    tp = (Y & P).sum(axis=1)
    den = Y.sum(axis=1) + P.sum(axis=1)
    return float(np.mean(Y != P)), float(np.where(den == 0, 1.0, 2 * tp / np.maximum(den, 1)).mean())


def progressive(make, X: np.ndarray, Y: np.ndarray) -> tuple[float, float]:
    labels = list(range(Y.shape[1]))
    model = preprocessing.StandardScaler() | make(labels)
    P = np.zeros_like(Y)
    for i, (row, y) in enumerate(zip(X.tolist(), Y.tolist())):
        # features named apart from the labels: River's ClassifierChain writes each label's
        # prediction into x under the label's name (int keys 0..5 overwrote features 0..5)
        x = {f"x{j}": v for j, v in enumerate(row)}
        p = model.predict_one(x)
        P[i] = [bool(p.get(k, False)) for k in labels]
        model.learn_one(x, dict(zip(labels, y)))
    return scores(Y, P)


def majority(Y: np.ndarray) -> tuple[float, float]:
    """Each label predicted by its running majority (relevant when seen in more than half)."""
    seen = np.vstack([np.zeros(Y.shape[1]), np.cumsum(Y, axis=0)[:-1]])
    return scores(Y, seen > np.arange(len(Y))[:, None] / 2)


def table(name: str, shuffles: int, learners: dict) -> dict:
    X, Y = load(name)
    runs = {learner: [] for learner in [*learners, "running majority"]}
    for o in range(shuffles + 1):
        idx = np.arange(len(X)) if o == 0 else np.random.default_rng(o).permutation(len(X))
        for learner, make in learners.items():
            runs[learner].append(progressive(make, X[idx], Y[idx]))
        runs["running majority"].append(majority(Y[idx]))
    return {learner: np.array(r) for learner, r in runs.items()}


def report(name: str, runs: dict) -> None:
    chain = runs[ANCHOR]
    print(f"\n{name}: {len(chain)} orders (file order + shuffles)")
    print(f"{'learner':<56}{'Hamming':>16}{'ratio':>7}{'below':>7}{'F1':>16}{'>=':>5}")
    for learner, r in runs.items():
        below = int((r[:, 0] < chain[:, 0]).sum())
        f1_ok = int((r[:, 1] >= chain[:, 1]).sum())
        print(f"{learner:<56}{r[:, 0].mean():>9.4f} ±{r[:, 0].std():.4f}"
              f"{r[:, 0].mean() / chain[:, 0].mean():>7.3f}{below:>7}"
              f"{r[:, 1].mean():>9.4f} ±{r[:, 1].std():.4f}{f1_ok:>5}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shuffles", type=int, default=10)
    parser.add_argument("--sets", default=",".join(SETS))
    args = parser.parse_args(argv)
    for name in args.sets.split(","):
        report(name, table(name, args.shuffles, LEARNERS))


if __name__ == "__main__":
    main()
