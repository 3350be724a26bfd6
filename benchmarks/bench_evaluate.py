"""`river-pa evaluate` as a user runs it (whole processes), against the anchors of issue 12.

Each figure is a fresh process, timed from outside, the systems interleaved, repeated R times
(min / median / max printed), after one warm-up run each (Numba's cache, the page cache):

1. the default job (`river-pa evaluate`: PA-I on River's Phishing), warm, vs River's own
   progressive loop on the same data and metrics (`river.linear_model.PAClassifier`):
   target <= 0.7x River's time;
2. the same job on the first run after install (an empty Numba cache each time): <= 1.0x;
3. a9a and a sparse file of N events (30 active of 2^18 indices, default N = 2,000,000), as
   libsvm for river-pa and in VW's text format for Vowpal Wabbit's driver
   (`python -m vowpalwabbit -d FILE --loss_function hinge -b 18 --quiet`; VW takes a libsvm
   line's feature tokens as part of its label and learns nothing from it): VW's time over
   river-pa's, target >= 0.5x on a9a and >= 1.0x on the sparse file;
4. river-pa's peak RSS on the sparse file over its peak RSS on the file's first 20,000 events
   (the same model and libraries: what the model needs): target <= 1.5x.

    python benchmarks/bench_evaluate.py [--events N] [--repeats R] [--workdir DIR]

Needs `pip install ".[bench]"` (vowpalwabbit) and the shared data (a9a). The generated files
are kept in --workdir (default: a folder in the system's temporary directory) for later runs.

"""

from __future__ import annotations

import argparse
import bz2
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RIVER_LOOP = ("from river import datasets, evaluate, linear_model, metrics; "
              "evaluate.progressive_val_score(datasets.Phishing(), "
              "linear_model.PAClassifier(C=1.0, mode=1), "
              "metrics.Accuracy() + metrics.F1() + metrics.LogLoss())")


def write_sparse(n: int, svm: Path, vw: Path, seed: int = 0, rows: int = 100_000) -> None:
    """n events of 30 distinct indices in 0..2^18-1 with values of 3 significant digits and
    labels from a hidden linear model, as libsvm and as VW text (the same numbers)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=2**18)
    with open(svm, "w") as fs, open(vw, "w") as fv:
        for lo in range(0, n, rows):
            m = min(rows, n - lo)
            idx = np.sort(rng.integers(0, 2**18 - 30, size=(m, 30)), axis=1)
            for j in range(1, 30):  # distinct within a row
                idx[:, j] = np.maximum(idx[:, j], idx[:, j - 1] + 1)
            val = np.round(rng.normal(size=(m, 30)), 2)
            score = (truth[idx] * val).sum(axis=1) + rng.normal(size=m)
            for label, r, v in zip(np.where(score > 0, "1", "-1"), idx.tolist(), val.tolist()):
                feats = " ".join(f"{a}:{b:g}" for a, b in zip(r, v))
                fs.write(f"{label} {feats}\n")
                fv.write(f"{label} | {feats}\n")


def libsvm_to_vw(src: Path, svm: Path, vw: Path) -> None:
    """A (bz2) libsvm file as plain libsvm and as VW text."""
    with bz2.open(src, "rt") as f, open(svm, "w") as fs, open(vw, "w") as fv:
        for line in f:
            label, _, feats = line.strip().partition(" ")
            fs.write(line)
            fv.write(f"{'1' if float(label) > 0 else '-1'} | {feats}\n")


def run(command: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one process."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{command} failed: {err.read()[-2000:].decode()}")
    return seconds, usage.ru_maxrss / 1024


def evaluate_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "river_pa", "evaluate", *map(str, args), "--quiet"]


def vw_cmd(path) -> list[str]:
    return [sys.executable, "-m", "vowpalwabbit", "-d", str(path), "--loss_function", "hinge",
            "-b", "18", "--quiet"]


def spread(values: list[float]) -> str:
    return (f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}")


def compare(label: str, ours, theirs, repeats: int, target: str, ok, ratio_of) -> None:
    """Interleave the two commands `repeats` times and print seconds and the ratio."""
    a, b = [], []
    for _ in range(repeats):
        a.append(ours()[0])
        b.append(theirs()[0])
    ratios = [ratio_of(x, y) for x, y in zip(a, b)]
    verdict = "met" if ok(statistics.median(ratios)) else "MISSED"
    print(f"{label}\n    river-pa s {spread(a)}   anchor s {spread(b)}   "
          f"ratio {spread(ratios)} (min / median / max; target {target}: {verdict})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path,
                        default=Path(tempfile.gettempdir()) / "river-pa-bench")
    args = parser.parse_args(argv)
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    from river_pa.evaluate.datasets import shared_folder

    sparse_svm, sparse_vw = work / f"sparse{args.events}.svm", work / f"sparse{args.events}.vw"
    if not sparse_svm.exists():
        print(f"writing {args.events:,} sparse events to {work} ...", flush=True)
        write_sparse(args.events, sparse_svm, sparse_vw)
    head = work / "sparse_head20000.svm"
    with open(sparse_svm) as f, open(head, "w") as out:
        out.writelines(line for _, line in zip(range(20_000), f))
    a9a_svm, a9a_vw = work / "a9a.svm", work / "a9a.vw"
    if not a9a_svm.exists():
        libsvm_to_vw(shared_folder() / "a9a" / "a9a.bz2", a9a_svm, a9a_vw)
    river = [sys.executable, "-c", RIVER_LOOP]
    for command in (evaluate_cmd(), river, evaluate_cmd(a9a_svm), vw_cmd(a9a_vw)):
        run(command)  # warm-up

    r = args.repeats
    lower = lambda x, y: x / y  # noqa: E731  river-pa's time over the anchor's
    speed = lambda x, y: y / x  # noqa: E731  the anchor's time over river-pa's
    compare("1. default job, warm: river-pa evaluate vs River's progressive_val_score",
            lambda: run(evaluate_cmd()), lambda: run(river), r, "<= 0.7x",
            lambda v: v <= 0.7, lower)
    with tempfile.TemporaryDirectory() as cache:
        fresh = iter(range(10**6))
        compare("2. default job, first run after install (empty Numba cache) vs River",
                lambda: run(evaluate_cmd(), {"NUMBA_CACHE_DIR": f"{cache}/{next(fresh)}"}),
                lambda: run(river), r, "<= 1.0x", lambda v: v <= 1.0, lower)
    compare("3a. a9a (32,561 events): VW driver time / river-pa evaluate time",
            lambda: run(evaluate_cmd(a9a_svm)), lambda: run(vw_cmd(a9a_vw)), r, ">= 0.5x",
            lambda v: v >= 0.5, speed)
    run(evaluate_cmd(sparse_svm))
    compare(f"3b. sparse file ({args.events:,} events, 30 of 2^18): VW time / river-pa time",
            lambda: run(evaluate_cmd(sparse_svm)), lambda: run(vw_cmd(sparse_vw)), r,
            ">= 1.0x", lambda v: v >= 1.0, speed)
    peaks = [run(evaluate_cmd(sparse_svm))[1] / run(evaluate_cmd(head))[1] for _ in range(r)]
    verdict = "met" if statistics.median(peaks) <= 1.5 else "MISSED"
    print(f"4. peak RSS, sparse file / its first 20,000 events: {spread(peaks)} "
          f"(target <= 1.5x: {verdict})")


if __name__ == "__main__":
    main()
