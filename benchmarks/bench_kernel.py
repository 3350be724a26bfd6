"""Kernel PA per event against a numpy per-event floor (issue 18: >= 1x), in one process.

Run from the repository root (scikit-learn reads USPS; the sets are in ../shared/data)::

    PYTHONPATH=. python benchmarks/bench_kernel.py            # USPS and mnist-5k, 3 repetitions
    PYTHONPATH=. python benchmarks/bench_kernel.py --events 2000 --reps 5

One progressive pass (``predict_one`` then ``learn_one``) of `KernelPAClassifier` (poly kernel
(x . v)^3, PA-I, C = 100, no budget: the setting of `examples/kernel_budget.py`) against
`numpy_floor` below: the same algorithm written the shortest way numpy allows, per event, the
support vectors in a preallocated array and K(x, v_i) for all of them one matrix-vector product
(BLAS, one thread: OPENBLAS_NUM_THREADS and friends are set to 1 before numpy loads, as the
learner uses one core). Both read the same feature dicts (every pixel, as River's image sets
give them); the floor turns each into an array with `np.fromiter`, and a second floor takes the
prebuilt array rows (no conversion: what numpy alone costs). CPU time of this thread,
repetitions interleaved; the ratio floor seconds / ours per repetition, min/median/max printed.

Before timing, both run once untimed and must hold the same number of support vectors up to
1% of the events: they do the same work (the floor's BLAS sums in another order, so a margin
near 0 may round the other way).

"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from kernel_budget import C, load_mnist, load_usps  # noqa: E402

from river_pa import KernelPAClassifier  # noqa: E402


def ours(events) -> tuple[float, int]:
    model = KernelPAClassifier(kernel="poly", degree=3, C=C)
    start = time.thread_time()
    for x, label in events:
        model.predict_one(x)
        model.learn_one(x, label)
    return time.thread_time() - start, model.n_support


def numpy_floor(events, rows=None) -> tuple[float, int]:
    """Multiclass kernel PA-I with the most violated constraint (labels get rows in order of
    first appearance, as the learner gives them), per event in numpy; `rows`: the events as
    prebuilt arrays instead of converting each dict."""
    d = len(events[0][0])
    S, A = np.zeros((len(events), d)), np.zeros((len(events), 16))
    label_row, n_sv = {}, 0
    start = time.thread_time()
    for i, (x, label) in enumerate(events):
        v = rows[i] if rows is not None else np.fromiter(x.values(), np.float64, d)
        k = (S[:n_sv] @ v) ** 3
        s = k @ A[:n_sv, : len(label_row)]
        _ = s.argmax() if len(s) else None  # the prediction
        y = label_row.setdefault(label, len(label_row))
        s = np.append(s, 0.0) if y == len(s) else s
        if len(s) < 2:
            continue
        others = s.copy()
        others[y] = -np.inf
        q = int(others.argmax())
        loss = s[q] - s[y] + 1.0
        if loss > 0.0:
            tau = min(C, loss / (2.0 * float(v @ v) ** 3))
            S[n_sv], A[n_sv, y], A[n_sv, q] = v, tau, -tau
            n_sv += 1
    return time.thread_time() - start, n_sv


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=None, help="the first N of each set")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    print("kernel PA (poly^3, PA-I, C = 100) per event; ratio = the floor's time / ours "
          "(min/median/max)")
    for name, load in (("usps", load_usps), ("mnist-5k", load_mnist)):
        X, y = load(args.events)
        events = [(dict(enumerate(row)), label) for row, label in zip(X.tolist(), y.tolist())]
        _, sv_ours = ours(events)
        _, sv_floor = numpy_floor(events)
        assert abs(sv_ours - sv_floor) <= 0.01 * len(events), (sv_ours, sv_floor)
        times = {"ours": [], "dicts": [], "arrays": []}
        for _ in range(args.reps):
            times["ours"].append(ours(events)[0])
            times["dicts"].append(numpy_floor(events)[0])
            times["arrays"].append(numpy_floor(events, X)[0])
        line = (f"  {name:9s} {len(events):,} events, {sv_ours:,} support vectors: ours "
                f"{len(events) / statistics.median(times['ours']):,.0f}/s")
        for floor in ("dicts", "arrays"):
            ratios = sorted(a / b for a, b in zip(times[floor], times["ours"]))
            line += (f" | vs the floor on {floor} {ratios[0]:.2f}/{statistics.median(ratios):.2f}/"
                     f"{ratios[-1]:.2f}x")
        print(line + " (>= 1x)", flush=True)


if __name__ == "__main__":
    main()
