"""Reproduce the rescaledexp comparison: Cutkosky and Boahen, Online Convex Optimization with
Unconstrained Domains and Losses (NIPS 2016; arXiv 2017), Section 4.1, Table 1, Appendix C.

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
rescaledexp 1.19, AdaDelta 1.21, Adam 1.51, PiSTOL 1.53, and ScaleInvariant 1.28, which is not
Kotlowski's algorithm: the paper's ScaleInvariant, its reference [23], predates Kotlowski 2017
and "requires tuning of some hyperparameter" (Section 4.1), so no row here is set against it).
After the table, each learner is run once more at its best setting and the loss over the first
and last twentieth of the pass is printed and plotted (`<out>_curves.png`).

Data (../shared/data, see SOURCES.md): a9a, phishing, mushrooms (labels 1/2 -> False/True),
Elec2 (in its time order), USPS (digit < 5), MNIST-5k (even digit; pixels / 255, as LIBSVM's
scaled copy). Every set but Elec2 is shuffled once with seed 0 (MNIST-5k is stored sorted by
class). Zero feature values are dropped (sparse dicts, as LIBSVM files store them).

Measured (full run, every event of the six sets, 2 shared cores, about 6 minutes), average
normalized loss: AdaGrad 1.049, PiSTOL 1.051, AdaDelta 1.225, Adam 1.261, RescaledExp 1.431
(a9a 1.061, phishing 1.032, mushrooms 1.255, Elec2 1.545, USPS 1.529, MNIST-5k 2.165),
ScaleInvariant (full) 1.571, RescaledExp (full vector) 2.091, ScaleInvariant 2.134.

Why RescaledExp is at 1.43 here and 1.19 in the paper (audit, measured; nothing was tuned):

* The algorithm is the paper's: the classifier's margins equal a plain transcription of
  Algorithm 1 per coordinate (k = sqrt 2, p = 1/L_t, M_t, eta_t, restart when |g| > 2 L_t,
  zero gradients skipped) to about 1e-14 on 3,000 events of USPS, a9a and Elec2
  (tests/paramfree/test_rescaledexp.py pins the same on a synthetic stream with restarts).
* The preprocessing is not what costs it. LIBSVM's USPS copy is scaled to [-1, 1] (2x - 1 of
  ours): RescaledExp gets 0.946 there instead of 0.601, AdaGrad 0.395 either way, so the
  paper's own copy would give about 2.4, not 1.53. MNIST-5k unscaled (0-255): 125.8. With no
  intercept in either, RescaledExp / tuned AdaGrad is 1.659 on Elec2, 1.533 on USPS, 2.172 on
  MNIST-5k (1.545, 1.529, 2.165 with it). Four shuffles (seeds 0-3):
  RescaledExp / best AdaGrad 1.52-1.54 on USPS, 2.10-2.17 on MNIST-5k, 1.05-1.06 on a9a.
  Kotlowski's d fixed at the data's dimension (instead of the coordinates seen so far) moves
  ScaleInvariant's loss by at most 0.004.
* The gap sits on three of the six sets, for two reasons the paper names or implies:
  - dense images (104 and 151 non-zero pixels per event; a9a, phishing, mushrooms 14-30):
    Appendix C.2 runs one 1-D instance per coordinate, whose regret bounds add up over the
    active coordinates, and each coordinate's first move is exp(1/2) - 1 = 0.65 whatever d.
    The first twentieth of the pass costs 1.54 (USPS) and 2.10 (MNIST-5k) against AdaGrad's
    0.63 and 0.54; the last twentieth is 1.28 and 1.71 times the best there. The gap closes
    with data: RescaledExp / AdaGrad (AdaGrad at its one-pass best, not retuned) is 1.53, 1.24,
    1.18 over passes 1, 2, 3 of USPS and 2.17, 1.54, 1.39 on MNIST-5k (LIBSVM's MNIST has
    60,000 training events, 12 times MNIST-5k). The dimension-free
    variant is at 1.08 and 1.12 there but loses elsewhere (2.09 on average).
  - Elec2 is a drifting stream in time order (the paper's sets are LIBSVM's): RescaledExp's epoch
    sums never forget, AdaGrad's best step is at the top of the grid (lr = 20), and the ratio
    stays 1.55, 1.44, 1.41 over three passes.
  On the three LIBSVM binary sets RescaledExp averages 1.116, better than the paper's 1.19.
* The baselines and sets differ from the paper's: its eight LIBSVM sets are not named in the
  text we have, and the normalized loss depends on the set; VW's PiSTOL scores 1.05 here
  (paper 1.53) and sets the floor on mushrooms (without it RescaledExp is best there, 1.000,
  and its average 1.389).
So 1.25 is out of reach on these six sets without tuning or switching variant per set: the
three others would have to average 1.38 instead of 1.75.

Run: `python examples/parameter_free.py [--quick] [--limit N] [--out DIR]`
(the losses of every learner and setting go to the same path with a .json suffix).
`--quick` keeps 600 events per set and the powers of ten 1e-3..1e1 only.

"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import math
import time
from pathlib import Path

import matplotlib
import numpy as np
from river import linear_model, optim
from sklearn.datasets import load_svmlight_file

import river_pa
from river_pa.evaluate.datasets import shared_folder

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

POWERS = [10.0**e for e in range(-5, 3)]
REFINE = [0.2, 0.4, 0.8, 2.0, 4.0, 6.0, 8.0]
QUICK_POWERS = [10.0**e for e in range(-3, 2)]
DATASETS = ["a9a", "phishing", "mushrooms", "elec2", "usps", "mnist5k"]
# Table 1 of the paper for the learners run here under the same name. Its "ScaleInvariant" (1.28)
# is a tuned algorithm of its reference [23], not Kotlowski's (published after it): no row here.
PAPER = {"AdaGrad": 1.14, "RescaledExp": 1.19, "AdaDelta": 1.21, "Adam": 1.51, "PiSTOL": 1.53}
PAPER_NOTE = ("paper's Table 1 also has ScaleInvariant 1.28: a tuned learner of its reference "
              "[23], not Kotlowski's untuned algorithm (the ScaleInvariant rows here)")
WINDOWS = 20


def data_dir() -> Path:
    """The shared data folder (`river_pa.evaluate.datasets.shared_folder`); FileNotFoundError if absent."""
    path = shared_folder()
    if not path.is_dir():
        raise FileNotFoundError(f"shared data folder not found at {path} (set RIVER_PA_DATA)")
    return path


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


def progressive_losses(model, margin, stream) -> np.ndarray:
    """Hinge loss max(0, 1 - y m) of each event of `stream` before `model` learns it."""
    f = margin(model)
    out = np.empty(len(stream))
    for i, (x, label) in enumerate(stream):
        m = f(x)
        out[i] = max(0.0, 1.0 - (m if label else -m))
        model.learn_one(x, label)
    return out


def run_progressive(model, margin, stream) -> float:
    """Average progressive hinge loss of `model` over one pass of `stream`."""
    return float(progressive_losses(model, margin, stream).mean())


def vw_losses(alpha: float, stream) -> np.ndarray:
    """Progressive hinge losses of VW's PiSTOL with ftrl_alpha = alpha (unclipped)."""
    import vowpalwabbit

    vw = vowpalwabbit.Workspace(
        f"--pistol --ftrl_alpha {alpha!r} --loss_function hinge --quiet "
        "--min_prediction -1e30 --max_prediction 1e30"
    )
    out = np.empty(len(stream))
    for i, (x, label) in enumerate(stream):
        feats = " ".join(f"f{k}:{v!r}" for k, v in x.items())
        ex = vw.parse(f"{1 if label else -1} | {feats}")
        m = vw.predict(ex)
        out[i] = max(0.0, 1.0 - (m if label else -m))
        vw.learn(ex)
        vw.finish_example(ex)
    vw.finish()
    return out


def run_vw(alpha: float, stream) -> float:
    """Average progressive hinge loss of VW's PiSTOL with ftrl_alpha = alpha."""
    return float(vw_losses(alpha, stream).mean())


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
    for name in TUNED:
        def score(lam, name=name):
            return run_progressive(tuned_model(name, lam), river_margin, stream)

        results[name] = tune(score, powers)
    if with_vw:
        results["PiSTOL"] = tune(lambda lam: run_vw(lam, stream), powers)
    return results


def tuned_model(name: str, lam: float):
    return linear_model.LogisticRegression(optimizer=TUNED[name](lam), loss=hinge())


def best_setting_losses(stream, results: dict) -> dict[str, np.ndarray]:
    """{learner: per-event progressive losses at its best setting} (one more pass each): the
    curves behind a score, to see whether a gap is a warm-up or persists."""
    curves = {}
    for name, r in results.items():
        if name == "PiSTOL":
            curves[name] = vw_losses(min(r, key=r.get), stream)
        elif isinstance(r, dict):
            curves[name] = progressive_losses(
                tuned_model(name, min(r, key=r.get)), river_margin, stream)
        else:
            curves[name] = progressive_losses(PARAMETER_FREE[name](), river_pa_margin, stream)
    return curves


def window_means(losses: np.ndarray, n_windows: int = WINDOWS) -> list[float]:
    """Mean loss over each of `n_windows` consecutive, nearly equal slices of the pass."""
    return [float(w.mean()) for w in np.array_split(losses, n_windows)]


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
    lines.append(PAPER_NOTE)
    return "\n".join(lines)


def _panels(per_dataset: dict, draw, path: Path) -> None:
    """One panel per data set, three to a row: draw(ax, data set, value), legend on the first."""
    n = len(per_dataset)
    cols = 3
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows))
    for ax, (ds, value) in zip(np.ravel(axes), per_dataset.items()):
        draw(ax, ds, value)
        ax.set_title(ds)
    for ax in np.ravel(axes)[n:]:
        ax.axis("off")
    np.ravel(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_grid(ax, ds, results):
    for i, (name, r) in enumerate(results.items()):
        if isinstance(r, dict):
            ax.plot(list(r), list(r.values()), marker="o", ms=3, label=name, color=f"C{i}")
        else:
            ax.axhline(r, ls=("--", ":", "-.")[i % 3], lw=1.6, label=name, color=f"C{i}")
    ax.set_xscale("log")
    ax.set_xlabel("hyperparameter")
    ax.set_ylabel("average hinge loss")
    lo = min(best_loss(r) for r in results.values())
    ax.set_ylim(0.9 * lo, max(3 * lo, lo + 0.2))


def _draw_curves(ax, ds, curves):
    for i, (name, losses) in enumerate(curves.items()):
        ends = [int(w[-1]) + 1 for w in np.array_split(np.arange(len(losses)), WINDOWS)]
        ax.plot(ends, window_means(losses), label=name, color=f"C{i}",
                ls="-" if name in TUNED or name == "PiSTOL" else "--")
    ax.set_xlabel("events seen")
    ax.set_ylabel(f"hinge loss (mean over 1/{WINDOWS} of the pass)")
    ax.set_yscale("symlog", linthresh=1e-3)


def plot(all_results: dict, path: Path) -> None:
    """Figures 1-2: loss vs hyperparameter per data set; parameter-free learners as flat lines."""
    _panels(all_results, _draw_grid, path)


def plot_curves(all_curves: dict, path: Path) -> None:
    """Mean progressive loss over each twentieth of the pass, every learner at its best setting."""
    _panels(all_curves, _draw_curves, path)


def run(datasets=DATASETS, limit=None, powers=POWERS, with_vw=True, full_max_d=1000, log=print,
        curves=None):
    """{data set: results} for every data set, printing progress through `log`. Given a dict
    `curves`, also fills curves[data set] with `best_setting_losses`."""
    all_results = {}
    for ds in datasets:
        start = time.perf_counter()
        stream = load(ds, limit)
        all_results[ds] = evaluate_dataset(stream, powers, with_vw, full_max_d)
        if curves is not None:
            curves[ds] = best_setting_losses(stream, all_results[ds])
        log(f"{ds}: {len(stream)} events, {time.perf_counter() - start:.1f} s")
    return all_results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="600 events, powers 1e-3..1e1")
    parser.add_argument("--limit", type=int, default=None, help="events per data set")
    parser.add_argument("--datasets", nargs="+", default=DATASETS, choices=DATASETS)
    parser.add_argument("--no-vw", action="store_true", help="skip Vowpal Wabbit's PiSTOL")
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder the plots go to (default: out)")
    args = parser.parse_args(argv)
    limit = 600 if args.quick and args.limit is None else args.limit
    powers = QUICK_POWERS if args.quick else POWERS
    curves = {}
    all_results = run(args.datasets, limit, powers, vw_available() and not args.no_vw,
                      curves=curves)
    table = normalized(all_results)
    print(format_table(all_results, table))
    print(format_windows(curves))
    png = args.out / "parameter_free.png"
    plot(all_results, png)
    curves_png = png.with_name(png.stem + "_curves.png")
    plot_curves(curves, curves_png)
    losses = png.with_suffix(".json")
    losses.write_text(json.dumps(
        {ds: {name: {str(k): v for k, v in r.items()} if isinstance(r, dict) else r
              for name, r in row.items()} for ds, row in all_results.items()}, indent=1))
    curves_png.with_suffix(".json").write_text(json.dumps(
        {ds: {name: window_means(c) for name, c in row.items()} for ds, row in curves.items()},
        indent=1))
    print(f"plots written to {png} and {curves_png}, losses next to them (.json)")
    return all_results


def format_windows(all_curves: dict) -> str:
    """Per data set: each learner's loss over the first and the last twentieth of the pass at
    its best setting, and the last twentieth relative to the best learner's there (omitted
    when that is 0)."""
    lines = [f"loss over the first / last 1/{WINDOWS} of the pass (best setting), "
             "last relative to the best there"]
    for ds, curves in all_curves.items():
        last = {name: window_means(c)[-1] for name, c in curves.items()}
        floor = min(last.values())
        cells = [f"{name} {window_means(c)[0]:.3f}/{last[name]:.3f}"
                 + (f" ({last[name] / floor:.2f})" if floor > 0 else "")
                 for name, c in curves.items()]
        lines.append(f"{ds}: " + ", ".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
