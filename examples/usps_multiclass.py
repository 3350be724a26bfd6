"""Reproduce the USPS comparison of Crammer et al. (2006), Section 10.3 (Knowl 10).

One online pass over the 7,291 USPS training digits in file order, features rescaled from
[0, 1] to [-1, 1] as in the LIBSVM copy (x' = 2x - 1), kernel K(x, v) = (x . v)^3:

* multiclass kernel PA, PA-I and PA-II (C = 100): `river_pa.KernelPAClassifier`;
* the multiclass kernel Perceptron with the uniform update over violating classes
  (Crammer and Singer 2003): on a round where the set E = {r != y : f_r(x) >= f_y(x)} is not
  empty, x becomes a support vector with coefficient +1 for y and -1/|E| for each r in E.
  It is a baseline for this comparison only, implemented below (`perceptron_errors`).

Every learner predicts before it learns (progressive validation); a learner that has seen no
label yet predicts nothing, which counts as an error. The script prints the cumulative online
error of each learner and plots the error rate against the round.

Paper vs this run. The paper reports about 3.9% for PA-I and 6.4% for the Perceptron; a
reference run of ours measured 4.7% and 7.5%. This script gives PA-I 4.66% and the Perceptron
7.61% (PA and PA-II make the same mistakes as PA-I: with K(x, x) = ||x||^6 ~ 10^7 the step
l / 2K(x, x) never reaches C = 100, and 1/2C is negligible next to 2K(x, x)). The gap is the
same in kind (PA-I 2.95 points below the Perceptron; the paper: 2.5) but both rates are about
0.8-1.2 points higher. What we know differs: the paper does not say which USPS copy, scaling
or order it used; this copy was converted from an HDF5 file (see ../shared/data/SOURCES.md)
and its [0, 1] features are rescaled here; and the order matters: three random orders gave
PA-I 4.72%, 4.92%, 5.10% and the Perceptron 7.58%, 7.96%, 7.90% (``--orders 3``). We did not
tune anything to close the gap.

Run: ``python examples/usps_multiclass.py [--quick] [--orders K] [--out DIR]``.

"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import river_pa
from river_pa.evaluate.datasets import shared_folder

DATA = shared_folder() / "usps" / "usps.bz2"
C = 100.0
QUICK_ROUNDS = 2000


def load_usps(path: Path = DATA, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The first `n` training digits in file order: X (n x 256) in [-1, 1], labels (int)."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=256)
    X, y = 2.0 * X[:n].toarray() - 1.0, y[:n].astype(int)
    return X, y


def pa_errors(X: np.ndarray, y: np.ndarray, variant: str) -> tuple[np.ndarray, int]:
    """Mistake indicator per round of one online pass of the kernel PA, and its support size."""
    model = river_pa.KernelPAClassifier(kernel="poly", degree=3, gamma=1.0, coef0=0.0,
                                        variant=variant, C=C)
    keys = range(X.shape[1])
    mistakes = np.zeros(len(y), dtype=bool)
    for t, (row, label) in enumerate(zip(X.tolist(), y.tolist())):
        x = dict(zip(keys, row))
        mistakes[t] = model.predict_one(x) != label
        model.learn_one(x, label)
    return mistakes, model.n_support


def perceptron_errors(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
    """The same for the kernel multiclass Perceptron with the uniform update.

    Labels join the competition when first seen (as in `KernelPAClassifier`); the first label
    seen wins ties.

    """
    rows: dict = {}
    S = np.zeros((len(y), X.shape[1]))
    A = np.zeros((len(y), len(np.unique(y))))
    n_sv = 0
    mistakes = np.zeros(len(y), dtype=bool)
    for t, (x, label) in enumerate(zip(X, y.tolist())):
        n = len(rows)
        s = ((S[:n_sv] @ x) ** 3) @ A[:n_sv, :n]
        mistakes[t] = n == 0 or list(rows)[int(np.argmax(s))] != label
        r = rows.setdefault(label, n)
        s = np.append(s, 0.0) if r == n else s
        violators = [k for k in range(len(s)) if k != r and s[k] >= s[r]]
        if violators:
            S[n_sv] = x
            A[n_sv, r] = 1.0
            A[n_sv, violators] = -1.0 / len(violators)
            n_sv += 1
    return mistakes, n_sv


LEARNERS = {
    "PA": lambda X, y: pa_errors(X, y, "PA"),
    "PA-I": lambda X, y: pa_errors(X, y, "PA-I"),
    "PA-II": lambda X, y: pa_errors(X, y, "PA-II"),
    "Perceptron": perceptron_errors,
}


def run(X: np.ndarray, y: np.ndarray, learners=tuple(LEARNERS)) -> dict:
    """{name: (mistake indicators, support vectors, seconds)} for one pass in the given order."""
    out = {}
    for name in learners:
        start = time.perf_counter()
        mistakes, n_sv = LEARNERS[name](X, y)
        out[name] = (mistakes, n_sv, time.perf_counter() - start)
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, (mistakes, _, _)), style in zip(results.items(), ["-", "--", ":", "-."]):
        rounds = np.arange(1, len(mistakes) + 1)  # PA, PA-I, PA-II overlap: dashes show them
        ax.plot(rounds, 100 * np.cumsum(mistakes) / rounds, style, label=name)
    ax.set(xlabel="round", ylabel="cumulative online error (%)", ylim=(0, 20),
           title="USPS, kernel (x.v)^3, C = 100, one pass")
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_ROUNDS} digits only")
    parser.add_argument("--orders", type=int, default=0,
                        help="also average PA-I and the Perceptron over this many random orders")
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder the plots go to (default: out)")
    args = parser.parse_args(argv)

    X, y = load_usps(n=QUICK_ROUNDS if args.quick else None)
    results = run(X, y)
    print(f"USPS, {len(y)} rounds in file order, kernel (x.v)^3, C = {C:g}")
    print(f"{'learner':<12}{'online error %':>16}{'support vectors':>17}{'seconds':>9}")
    for name, (mistakes, n_sv, seconds) in results.items():
        print(f"{name:<12}{100 * mistakes.mean():>16.2f}{n_sv:>17}{seconds:>9.1f}")
    plot(results, args.out / "usps_multiclass.png")
    print(f"plot: {args.out / 'usps_multiclass.png'}")

    rng = np.random.default_rng(0)
    for k in range(args.orders):
        order = rng.permutation(len(y))
        shuffled = run(X[order], y[order], ("PA-I", "Perceptron"))
        print(f"random order {k}: " + ", ".join(
            f"{name} {100 * m.mean():.2f}%" for name, (m, _, _) in shuffled.items()))
    return results


if __name__ == "__main__":
    main()
