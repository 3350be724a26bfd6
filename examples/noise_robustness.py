"""Robustness to noise and the effect of C: Crammer et al. (2006), Sections 10.1 and 10.2.

Synthetic 2-D Gaussian streams, online (progressive) error and hinge loss of PA, PA-I and PA-II,
averaged over repetitions:

* Section 10.1: 4,000 examples, 10 repetitions, PA-I and PA-II with C = 0.001, under instance
  noise (Gaussian noise of covariance sigma I added to every instance) and under label noise
  (each label flipped with probability p). The paper: all three agree at low noise; at high
  noise PA-I and PA-II clearly beat PA, whose full steps chase the noise.
* Section 10.2: the online error as a function of log10 C for label noise p in {0, 0.1, 0.2}
  (small C is robust, large C over-reacts), and test-error learning curves over 10,000 examples
  with p = 0.02 for C = 100 (fast start, worse plateau) and C = 0.001 (slow start, better plateau).

Data (our reading; the text we have gives no exact means or covariances): y = +1 or -1 with
probability 1/2 each, x ~ N(y (1, 1), 0.25 I) in R^2, no intercept (the classes are symmetric
about the origin, as in the paper's bias-free setting). The clean stream is nearly separable
(Bayes error Phi(-2 sqrt 2) = 0.23%). Test errors in Section 10.2 are measured on a fresh test
set with the same label noise, as the paper's plateaus (about 2% and 4% at p = 0.02) suggest.

Usage::

    python examples/noise_robustness.py              # full: 4,000 examples x 10 repetitions
    python examples/noise_robustness.py --quick      # 1,000 examples x 3 repetitions
    python examples/noise_robustness.py --out out/noise

Prints one table per experiment and writes PNG plots to --out (default out/noise_robustness).

"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from river_pa import PAClassifier

VARIANTS = ("PA", "PA-I", "PA-II")
MEAN = np.array([1.0, 1.0])
BASE_STD = 0.5


def make_stream(n, rng, instance_noise=0.0, label_noise=0.0):
    """(X, y, clean y): n instances in R^2 (float64, n x 2) and labels +-1 (noisy and clean)."""
    clean = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = clean[:, None] * MEAN + BASE_STD * rng.normal(size=(n, 2))
    if instance_noise:
        X += np.sqrt(instance_noise) * rng.normal(size=(n, 2))
    y = np.where(rng.random(n) < label_noise, -clean, clean)
    return X, y, clean


def as_events(X):
    return [{"x0": a, "x1": b} for a, b in X.tolist()]


def online_run(variant, C, X, y):
    """(online error rate, mean hinge loss) of one pass of predict-then-learn."""
    model = PAClassifier(variant=variant, C=C, learn_intercept=False)
    mistakes, loss = 0, 0.0
    for x, yi in zip(as_events(X), y.tolist()):
        margin = model.decision_function_one(x)
        mistakes += yi * margin <= 0.0
        loss += max(0.0, 1.0 - yi * margin)
        model.learn_one(x, yi)
    return mistakes / len(y), loss / len(y)


def noise_sweep(kind, levels, C=0.001, n=4000, reps=10, seed=0):
    """{variant: (errors, losses)}, each an array over `levels`, averaged over repetitions.

    `kind` is "instance" (levels are sigma) or "label" (levels are flip probabilities p). Every
    variant sees the same streams.

    """
    out = {v: np.zeros((2, len(levels))) for v in VARIANTS}
    rng = np.random.default_rng(seed)
    for i, level in enumerate(levels):
        for _ in range(reps):
            noise = {"instance_noise" if kind == "instance" else "label_noise": level}
            X, y, _ = make_stream(n, rng, **noise)
            for v in VARIANTS:
                out[v][:, i] += online_run(v, C, X, y)
    return {v: (r[0] / reps, r[1] / reps) for v, r in out.items()}


def c_sweep(log_cs, label_noises=(0.0, 0.1, 0.2), n=4000, reps=10, seed=1):
    """{(variant, p): online errors over `log_cs`} for PA-I and PA-II."""
    rng = np.random.default_rng(seed)
    out = {(v, p): np.zeros(len(log_cs)) for v in VARIANTS[1:] for p in label_noises}
    for p in label_noises:
        for _ in range(reps):
            X, y, _ = make_stream(n, rng, label_noise=p)
            for v in VARIANTS[1:]:
                for i, log_c in enumerate(log_cs):
                    out[v, p][i] += online_run(v, 10.0**log_c, X, y)[0]
    return {k: e / reps for k, e in out.items()}


def learning_curves(cs=(100.0, 0.001), n=10_000, every=250, reps=10, p=0.02, seed=2):
    """{C: test error after t examples, t = every, 2 every, ..., n}, PA-I, averaged."""
    rng = np.random.default_rng(seed)
    steps = np.arange(every, n + 1, every)
    out = {c: np.zeros(len(steps)) for c in cs}
    for _ in range(reps):
        X, y, _ = make_stream(n, rng, label_noise=p)
        X_test, y_test, _ = make_stream(2000, rng, label_noise=p)
        for c in cs:
            model = PAClassifier(variant="PA-I", C=c, learn_intercept=False)
            events = as_events(X)
            for j, t in enumerate(steps):
                for x, yi in zip(events[t - every : t], y[t - every : t].tolist()):
                    model.learn_one(x, yi)
                w = np.array([model.weights.get("x0", 0.0), model.weights.get("x1", 0.0)])
                out[c][j] += np.mean(np.sign(X_test @ w) != y_test)
    return steps, {c: e / reps for c, e in out.items()}


def print_table(title, header, rows):
    print(f"\n{title}")
    print("  ".join(f"{h:>9s}" for h in header))
    for row in rows:
        print("  ".join(f"{v:>9.4f}" if isinstance(v, float) else f"{v!s:>9s}" for v in row))


def plot(path, panels):
    """One row of line plots: panels = [(title, xlabel, ylabel, x, {label: y})]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, (title, xlabel, ylabel, x, lines) in zip(np.atleast_1d(axes), panels):
        for label, y in lines.items():
            ax.plot(x, y, marker="o", markersize=3, label=label)
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 examples, 3 repetitions")
    parser.add_argument("--out", type=Path, default=Path("out/noise_robustness"))
    args = parser.parse_args(argv)
    n, reps, n_long = (1000, 3, 3000) if args.quick else (4000, 10, 10_000)
    args.out.mkdir(parents=True, exist_ok=True)

    sigmas = np.linspace(0.0, 4.0, 9)
    ps = np.linspace(0.0, 0.4, 9)
    inst = noise_sweep("instance", sigmas, n=n, reps=reps)
    lab = noise_sweep("label", ps, n=n, reps=reps)
    header = ["noise", *(f"err {v}" for v in VARIANTS), *(f"loss {v}" for v in VARIANTS)]
    for name, levels, res in (("instance noise sigma", sigmas, inst), ("label noise p", ps, lab)):
        rows = [[float(lv), *(float(res[v][0][i]) for v in VARIANTS),
                 *(float(res[v][1][i]) for v in VARIANTS)] for i, lv in enumerate(levels)]
        print_table(f"Section 10.1, {name} (C = 0.001, {n} examples, {reps} reps)", header, rows)
    plot(args.out / "section_10_1.png", [
        ("instance noise", "sigma", "online error", sigmas, {v: inst[v][0] for v in VARIANTS}),
        ("instance noise", "sigma", "mean hinge loss", sigmas, {v: inst[v][1] for v in VARIANTS}),
        ("label noise", "p", "online error", ps, {v: lab[v][0] for v in VARIANTS}),
        ("label noise", "p", "mean hinge loss", ps, {v: lab[v][1] for v in VARIANTS}),
    ])

    log_cs = np.arange(-5.0, 3.0)
    by_c = c_sweep(log_cs, n=n, reps=reps)
    print_table(f"Section 10.2, online error vs log10 C ({n} examples, {reps} reps)",
                ["log10 C", *(f"{v} p={p}" for v, p in by_c)],
                [[float(lc), *(float(e[i]) for e in by_c.values())] for i, lc in enumerate(log_cs)])
    steps, curves = learning_curves(n=n_long, reps=reps)
    print_table(f"Section 10.2, PA-I test error after t examples (p = 0.02, {reps} reps)",
                ["t", *(f"C={c:g}" for c in curves)],
                [[int(t), *(float(e[i]) for e in curves.values())]
                 for i, t in enumerate(steps) if i % 4 == 3])
    plot(args.out / "section_10_2.png", [
        ("effect of C", "log10 C", "online error", log_cs,
         {f"{v}, p={p}": e for (v, p), e in by_c.items()}),
        ("learning curves, p = 0.02", "examples", "test error", steps,
         {f"C = {c:g}": e for c, e in curves.items()}),
    ])
    print(f"\nplots written to {args.out}/section_10_1.png and section_10_2.png")


if __name__ == "__main__":
    main()
