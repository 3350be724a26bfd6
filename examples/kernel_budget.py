"""Kernel PA on a budget: does the error keep falling on a stationary stream?

One online pass (progressive validation) of `river_pa.KernelPAClassifier` (kernel (x . v)^3,
PA-I, C = 100) over two stationary digit streams: the 7,291 USPS training digits in file
order, features rescaled to [-1, 1] as in `usps_multiclass.py`, and the 5,000 mnist-5k digits
(pixels / 255) in one fixed random order (seed 0: the file is sorted by label). Learners: no
budget, and budget 500 with each budget rule: "projectron" (the default: once full, steps are
projected onto the span of the support vectors, Orabona et al. 2009) and "BPA-S" (Wang and
Vucetic 2010: replace the vector whose projection onto the new one loses least). The script
prints the total online error, the error of each quarter of the stream and the seconds each
quarter took (flat seconds = flat per-event cost).

Measured (full run, 2 shared cores):

| data | learner | error | quarters | s per quarter |
|---|---|---|---|---|
| USPS | no budget | 4.66% | 7.79 4.61 3.13 3.13 | growing (2,591 vectors) |
| USPS | projectron, 500 | 6.24% (1.34x) | 8.61 6.91 4.66 4.77 | 0.3 0.3 0.3 0.4 |
| USPS | BPA-S, 500 | 7.64% (1.64x) | 8.12 7.19 8.01 7.24 | 0.2 0.2 0.2 0.2 |
| mnist-5k | no budget | 9.74% | 17.28 9.28 5.84 6.56 | 0.4 0.6 0.8 1.1 (2,131 vectors) |
| mnist-5k | projectron, 500 | 13.06% (1.34x) | 18.72 12.56 9.92 11.04 | 0.5 0.5 0.5 0.5 |
| mnist-5k | BPA-S, 500 | 16.22% (1.67x) | 18.00 13.92 13.76 19.20 | 0.3 0.3 0.3 0.4 |

The projectron meets both targets of issue 13 on both streams (last quarter <= second,
total <= 1.5x the unbounded learner's); BPA-S meets neither on mnist-5k and its last quarter
is worse than its second on USPS too. The projectron costs O(B^2) per update (the inverse
kernel matrix, 2 MB at B = 500) against BPA-S's O(B).

Over 5 orders (``--orders 5``: the order above, then seeded shuffles; about 10 minutes):
USPS error 4.87 / 6.34 / 8.07% (no budget / projectron / BPA-S; projectron 1.24-1.34x,
BPA-S 1.51-1.76x the unbounded error by order), mnist-5k 9.62 / 12.87 / 16.33% (1.30-1.38x,
1.65-1.82x); BPA-S's last quarter is worse than its second in 5 of 5 orders on both, the
projectron's in none.

Run: ``python examples/kernel_budget.py [--quick] [--out DIR] [--budget 500] [--data
usps,mnist-5k] [--orders 1]`` (--quick: the first 1,000 events of each set; the figures go to
DIR/kernel_budget.json, DIR defaults to out; --orders N > 1 prints the spread over N orders
instead).

"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

import river_pa
from river_pa.evaluate.datasets import shared_folder

C = 100.0
MNIST = shared_folder() / "mnist_5k" / "mnist_5k.csv.gz"
LEARNERS = {"no budget": {}, "projectron": {"budget_rule": "projectron"},
            "BPA-S": {"budget_rule": "BPA-S"}}


def load_usps(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """USPS in file order, features in [-1, 1] (the loader of `usps_multiclass.py`)."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(shared_folder() / "usps" / "usps.bz2"), n_features=256)
    return 2.0 * X[:n].toarray() - 1.0, y[:n].astype(int)


def load_mnist(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """mnist-5k in a fixed random order (seed 0), pixels / 255."""
    with gzip.open(MNIST, "rt") as f:
        a = np.loadtxt(f, delimiter=",")
    a = a[np.random.default_rng(0).permutation(len(a))][:n]
    return a[:, :-1] / 255.0, a[:, -1].astype(int)


DATA = {"usps": load_usps, "mnist-5k": load_mnist}


def one_pass(X: np.ndarray, y: np.ndarray, budget: int | None = None, **params):
    """(mistake indicators, seconds of each quarter, support vectors) of one online pass."""
    model = river_pa.KernelPAClassifier(kernel="poly", degree=3, C=C, budget=budget, **params)
    keys = range(X.shape[1])
    mistakes = np.zeros(len(y), dtype=bool)
    ends = set(np.cumsum([len(q) for q in np.array_split(y, 4)]).tolist())
    seconds, start = [], time.perf_counter()
    for t, (row, label) in enumerate(zip(X.tolist(), y.tolist())):
        x = dict(zip(keys, row))
        mistakes[t] = model.predict_one(x) != label
        model.learn_one(x, label)
        if t + 1 in ends:
            seconds.append(time.perf_counter() - start)
            start = time.perf_counter()
    return mistakes, seconds, model.n_support


def quarters(mistakes: np.ndarray) -> list[float]:
    """Online error (%) of each quarter of the stream."""
    return [100 * q.mean() for q in np.array_split(mistakes, 4)]


def table(X, y, budget: int, learners=tuple(LEARNERS)) -> dict:
    """{learner: one_pass(...)}; "no budget" ignores `budget`."""
    return {name: one_pass(X, y, None if name == "no budget" else budget, **LEARNERS[name])
            for name in learners}


def orders(X, y, budget: int, n: int) -> None:
    """Print, per learner, the error over the stored order and n - 1 seeded shuffles (mean, sd,
    ratio to the unbounded learner's by order) and in how many its last quarter is worse than
    its second."""
    runs = {name: [] for name in LEARNERS}
    for o in range(n):
        idx = np.arange(len(y)) if o == 0 else np.random.default_rng(100 + o).permutation(len(y))
        for name, (mistakes, _, _) in table(X[idx], y[idx], budget).items():
            runs[name].append([100 * mistakes.mean(), *quarters(mistakes)])
    base = np.array(runs["no budget"])[:, 0]
    for name, r in runs.items():
        r = np.array(r)
        ratio = r[:, 0] / base
        print(f"{name:<12}{r[:, 0].mean():>7.2f} +-{r[:, 0].std():.2f}  x unbounded "
              f"{ratio.min():.2f}-{ratio.max():.2f}  last quarter > second in "
              f"{int((r[:, 4] > r[:, 2]).sum())} of {n}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 1,000 events of each set")
    parser.add_argument("--out", type=Path, default=Path("out"),
                        help="folder the figures go to, as kernel_budget.json (default: out)")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--data", default="usps,mnist-5k")
    parser.add_argument("--orders", type=int, default=1)
    args = parser.parse_args(argv)
    out = {}
    for name in args.data.split(","):
        X, y = DATA[name](1000 if args.quick else None)
        if args.orders > 1:
            print(f"\n{name}: {args.orders} orders, budget {args.budget}: error %")
            orders(X, y, args.budget, args.orders)
            continue
        out[name] = results = table(X, y, args.budget)
        base = results["no budget"][0].mean()
        print(f"\n{name}: {len(y)} events, kernel (x.v)^3, C = {C:g}, budget {args.budget}")
        print(f"{'learner':<12}{'error %':>9}{'x unbounded':>13}  quarters %"
              f"{'':<17}s per quarter   vectors")
        for learner, (mistakes, seconds, n_sv) in results.items():
            q = " ".join(f"{v:5.2f}" for v in quarters(mistakes))
            s = " ".join(f"{v:.1f}" for v in seconds)
            print(f"{learner:<12}{100 * mistakes.mean():>9.2f}{mistakes.mean() / base:>13.2f}"
                  f"  {q}   {s:<16}{n_sv}")
    path = args.out / "kernel_budget.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({name: {learner: {"error": 100 * m.mean(), "quarters": quarters(m),
                                                 "seconds": s, "vectors": n_sv}
                                       for learner, (m, s, n_sv) in results.items()}
                                for name, results in out.items()}, indent=1))
    print(f"\nfigures: {path}")
    return out


if __name__ == "__main__":
    main()
