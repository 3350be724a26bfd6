"""Reproduce the rescaledexp comparison: Cutkosky and Boahen (2017), Section 4.1, Table 1, App. C.

Linear classification with the hinge loss; the score of a learner on a data set is its average
progressive hinge loss after one pass (predict on each event, then learn from it). Compared:

* parameter-free, no tuning at all: `RescaledExpClassifier` (coordinate-wise, as the paper's
  linear experiments, Appendix C.2; its intercept learned by the same rule), the same with one
  full-vector instance (reported apart, not picked per data set), and
  `CoordinateScaleInvariantClassifier` and `FullScaleInvariantClassifier` (Kotlowski 2017,
  alpha = 1.5, never tuned);
* River's `LogisticRegression(loss=Hinge(), optimizer=...)` with AdaGrad(lr), Adam(lr) and
  AdaDelta(eps) (River's AdaDelta has no learning rate: eps sets its initial step size), the
  intercept with River's default intercept_lr = 0.01;
* Vowpal Wabbit `--pistol --loss_function hinge` (predictions unclipped) tuned over ftrl_alpha.

Each tuned learner runs every power of ten from 1e-5 to 1e2, then beta * lambda_best for beta in
{0.2, 0.4, 0.8, 2, 4, 6, 8} (Appendix C.1); its score is its best loss. The normalized loss
(Appendix C.4) divides each score by the best loss of any learner and setting on that data set;
the table's last row averages it over data sets (the paper's Table 1: AdaGrad 1.14,
rescaledexp 1.19, AdaDelta 1.21, ScaleInvariant 1.28, Adam 1.51, PiSTOL 1.53).

Data (../shared/data, see SOURCES.md): a9a, phishing, mushrooms (labels 1/2 -> False/True),
Elec2 (in its time order), USPS (digit < 5), MNIST-5k (even digit; pixels / 255, as LIBSVM's
scaled copy). Every set but Elec2 is shuffled once with seed 0 (MNIST-5k is stored sorted by
class). Zero feature values are dropped (sparse dicts, as LIBSVM files store them).

Measured (full run, every event of the six sets, 2 shared cores, about 4 to 10 minutes),
average normalized loss: AdaGrad 1.049, PiSTOL 1.051, AdaDelta 1.225, Adam 1.261,
RescaledExp 1.431, ScaleInvariant (full) 1.571, RescaledExp (full vector) 2.091,
ScaleInvariant 2.134. Coordinate-wise RescaledExp loses most on the dense image sets (USPS
1.53, MNIST-5k 2.17), where the full-vector variant is at 1.08 and 1.12 (Appendix C.2 warns
that the coordinate-wise reduction can be much worse when gradients are not sparse).

Run: `python examples/parameter_free.py [--quick] [--limit N] [--out out/parameter_free.png]`
(the losses of every learner and setting go to the same path with a .json suffix).
`--quick` keeps 600 events per set and the powers of ten 1e-3..1e1 only.

"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import math
import os
import time
from pathlib import Path

import matplotlib
import numpy as np
from river import linear_model, optim
from sklearn.datasets import load_svmlight_file

import river_pa

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
POWERS = [10.0**e for e in range(-5, 3)]
REFINE = [0.2, 0.4, 0.8, 2.0, 4.0, 6.0, 8.0]
QUICK_POWERS = [10.0**e for e in range(-3, 2)]
DATASETS = ["a9a", "phishing", "mushrooms", "elec2", "usps", "mnist5k"]
PAPER = {"AdaGrad": 1.14, "RescaledExp": 1.19, "AdaDelta": 1.21, "ScaleInvariant": 1.28,
         "Adam": 1.51, "PiSTOL": 1.53}


def data_dir() -> Path:
    """The shared data folder: $RIVER_PA_DATA, else ../shared/data from the project or above."""
    env = os.environ.get("RIVER_PA_DATA")
    candidates = (
        [Path(env)] if env else [ROOT.parent / "shared/data", ROOT.parents[1] / "shared/data"]
    )
    for path in candidates:
        if path.is_dir():
            return path
    raise FileNotFoundError(f"shared data folder not found in {[str(p) for p in candidates]}")


def _svmlight(path: Path, positive) -> tuple[np.ndarray, np.ndarray]:
    with bz2.open(path) as f:
        X, y = load_svmlight_file(f)
    return X.toarray(), positive(y)


def _csv(path: Path, skip_header: bool) -> np.ndarray:
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", skiprows=int(skip_header))


def load_arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a shared data set as float64 features and bool labels, in file order."""
    root = data_dir()
    if name == "a9a":
        return _svmlight(root / "a9a/a9a.bz2", lambda y: y > 0)
    if name == "phishing":
        return _svmlight(root / "phishing/phishing.bz2", lambda y: y > 0)
    if name == "mushrooms":
        return _svmlight(root / "mushrooms/mushrooms.bz2", lambda y: y > 1)
    if name == "usps":
        return _svmlight(root / "usps/usps.bz2", lambda y: y < 5)
    if name == "elec2":
        data = _csv(root / "elec2/elec.csv.gz", skip_header=True)
        return data[:, :-1], data[:, -1] > 0
    if name == "mnist5k":
        data = _csv(root / "mnist_5k/mnist_5k.csv.gz", skip_header=False)
        return data[:, :-1] / 255.0, data[:, -1] % 2 == 0
    raise ValueError(f"unknown data set {name!r}; choose from {DATASETS}")


def load(name: str, limit: int | None = None, seed: int = 0) -> list[tuple[dict, bool]]:
    """The events of a data set as (sparse feature dict, bool label), shuffled but for Elec2."""
    X, y = load_arrays(name)
    if name == "elec2":
        order = np.arange(len(y))[:limit]
    else:
        order = np.random.default_rng(seed).permutation(len(y))[:limit]
    stream = []
    for row, label in zip(X[order], y[order]):
        nz = np.flatnonzero(row)
        stream.append((dict(zip(nz.tolist(), row[nz].tolist())), bool(label)))
    return stream


# -- learners ---------------------------------------------------------------------------------


def river_margin(model):
    # River's linear models expose the raw score only through this method.
    return model._raw_dot_one


def river_pa_margin(model):
    return model.decision_function_one


def run_progressive(model, margin, stream) -> float:
    """Average progressive hinge loss max(0, 1 - y m) of `model` over one pass of `stream`."""
    f = margin(model)
    total = 0.0
    for x, label in stream:
        m = f(x)
        total += max(0.0, 1.0 - (m if label else -m))
        model.learn_one(x, label)
    return total / len(stream)


def run_vw(alpha: float, stream) -> float:
    """Average progressive hinge loss of VW's PiSTOL with ftrl_alpha = alpha (unclipped)."""
    import vowpalwabbit

    vw = vowpalwabbit.Workspace(
        f"--pistol --ftrl_alpha {alpha!r} --loss_function hinge --quiet "
        "--min_prediction -1e30 --max_prediction 1e30"
    )
    total = 0.0
    for x, label in stream:
        feats = " ".join(f"f{k}:{v!r}" for k, v in x.items())
        ex = vw.parse(f"{1 if label else -1} | {feats}")
        m = vw.predict(ex)
        total += max(0.0, 1.0 - (m if label else -m))
        vw.learn(ex)
        vw.finish_example(ex)
    vw.finish()
    return total / len(stream)


def hinge():
    return optim.losses.Hinge()


PARAMETER_FREE = {
    "RescaledExp": lambda: river_pa.RescaledExpClassifier(loss=hinge()),
    "RescaledExp (full vector)": lambda: river_pa.RescaledExpClassifier(
        loss=hinge(), coordinatewise=False
    ),
    "ScaleInvariant": lambda: river_pa.CoordinateScaleInvariantClassifier(loss=hinge()),
    "ScaleInvariant (full)": lambda: river_pa.FullScaleInvariantClassifier(loss=hinge()),
}

TUNED = {
    "AdaGrad": lambda lam: optim.AdaGrad(lr=lam),
    "Adam": lambda lam: optim.Adam(lr=lam),
    "AdaDelta": lambda lam: optim.AdaDelta(eps=lam),
}


def vw_available() -> bool:
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        return False
    return True


def tune(score, powers) -> dict[float, float]:
    """Appendix C.1: every value in `powers`, then beta * best for beta in REFINE."""
    losses = {lam: score(lam) for lam in powers}
    best = min(losses, key=losses.get)
    for beta in REFINE:
        lam = best * beta
        if lam not in losses:
            losses[lam] = score(lam)
    return dict(sorted(losses.items()))


def evaluate_dataset(stream, powers, with_vw: bool, full_max_d: int) -> dict:
    """{learner: float loss (parameter-free) or {hyperparameter: loss} (tuned)}."""
    results = {}
    d = len({k for x, _ in stream for k in x})
    for name, make in PARAMETER_FREE.items():
        if name.endswith("(full)") and d > full_max_d:
            continue
        results[name] = run_progressive(make(), river_pa_margin, stream)
    for name, make_opt in TUNED.items():
        def score(lam, make_opt=make_opt):
            model = linear_model.LogisticRegression(optimizer=make_opt(lam), loss=hinge())
            return run_progressive(model, river_margin, stream)

        results[name] = tune(score, powers)
    if with_vw:
        results["PiSTOL"] = tune(lambda lam: run_vw(lam, stream), powers)
    return results


def best_loss(result) -> float:
    return min(result.values()) if isinstance(result, dict) else result


def normalized(all_results: dict) -> dict[str, dict[str, float]]:
    """Appendix C.4: best loss of each learner / best loss of any learner, per data set."""
    table = {}
    for ds, results in all_results.items():
        best = {name: best_loss(r) for name, r in results.items()}
        floor = min(best.values())
        table[ds] = {name: b / floor for name, b in best.items()}
    return table


def average_normalized(table: dict) -> dict[str, float]:
    learners = {name for row in table.values() for name in row}
    return {
        name: float(np.mean([row[name] for row in table.values() if name in row]))
        for name in learners
    }


def format_table(all_results: dict, table: dict) -> str:
    learners = list(next(iter(all_results.values())))
    for row in all_results.values():
        learners += [n for n in row if n not in learners]
    width = max(len(n) for n in learners) + 2
    lines = ["average hinge loss (best setting) / normalized loss".center(20 + 17 * len(table))]
    lines.append("learner".ljust(width) + "".join(ds.rjust(17) for ds in table) + "   average")
    avg = average_normalized(table)
    for name in sorted(learners, key=avg.get):
        cells = ""
        for ds in table:
            r = all_results[ds].get(name)
            cell = f"{best_loss(r):.4f}/{table[ds][name]:.3f}" if r is not None else "-"
            cells += cell.rjust(17)
        paper = PAPER.get(name)
        note = f"  (paper {paper})" if paper else ""
        lines.append(name.ljust(width) + cells + f"{avg[name]:10.3f}" + note)
    return "\n".join(lines)


def plot(all_results: dict, path: Path) -> None:
    """Figures 1-2: loss vs hyperparameter per data set; parameter-free learners as flat lines."""
    n = len(all_results)
    cols = 3
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows))
    for ax, (ds, results) in zip(np.ravel(axes), all_results.items()):
        for i, (name, r) in enumerate(results.items()):
            if isinstance(r, dict):
                ax.plot(list(r), list(r.values()), marker="o", ms=3, label=name, color=f"C{i}")
            else:
                ax.axhline(r, ls=("--", ":", "-.")[i % 3], lw=1.6, label=name, color=f"C{i}")
        ax.set_xscale("log")
        ax.set_title(ds)
        ax.set_xlabel("hyperparameter")
        ax.set_ylabel("average hinge loss")
        lo = min(best_loss(r) for r in results.values())
        ax.set_ylim(0.9 * lo, max(3 * lo, lo + 0.2))
    for ax in np.ravel(axes)[n:]:
        ax.axis("off")
    np.ravel(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(datasets=DATASETS, limit=None, powers=POWERS, with_vw=True, full_max_d=1000, log=print):
    """{data set: results} for every data set, printing progress through `log`."""
    all_results = {}
    for ds in datasets:
        start = time.perf_counter()
        stream = load(ds, limit)
        all_results[ds] = evaluate_dataset(stream, powers, with_vw, full_max_d)
        log(f"{ds}: {len(stream)} events, {time.perf_counter() - start:.1f} s")
    return all_results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="600 events, powers 1e-3..1e1")
    parser.add_argument("--limit", type=int, default=None, help="events per data set")
    parser.add_argument("--datasets", nargs="+", default=DATASETS, choices=DATASETS)
    parser.add_argument("--no-vw", action="store_true", help="skip Vowpal Wabbit's PiSTOL")
    parser.add_argument("--out", type=Path, default=ROOT / "out/parameter_free.png")
    args = parser.parse_args(argv)
    limit = 600 if args.quick and args.limit is None else args.limit
    powers = QUICK_POWERS if args.quick else POWERS
    all_results = run(args.datasets, limit, powers, vw_available() and not args.no_vw)
    table = normalized(all_results)
    print(format_table(all_results, table))
    plot(all_results, args.out)
    losses = args.out.with_suffix(".json")
    losses.write_text(json.dumps(
        {ds: {name: {str(k): v for k, v in r.items()} if isinstance(r, dict) else r
              for name, r in row.items()} for ds, row in all_results.items()}, indent=1))
    print(f"plot written to {args.out}, losses to {losses}")
    return all_results


if __name__ == "__main__":
    main()
