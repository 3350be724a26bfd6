"""Whole-process throughput of `river-pa evaluate` on a libsvm file vs Vowpal Wabbit's driver.

The sparse stream of issue 2 (200k events, 30 active features of 2^18 string keys) is written
once as a libsvm file for river-pa and once in VW's text format (``label | index:value ...``,
the same indices and values; VW's driver does not read libsvm lines, it takes their feature
tokens as part of the label). Each system then runs as a fresh process, interleaved, after one
warm-up run each (river-pa's Numba kernels load from the on-disk cache from then on):

    python -m river_pa evaluate FILE.svm --quiet
    python -m vowpalwabbit -d FILE.vw --loss_function hinge -b 18 --quiet

Target (issue 2, section 6): river-pa >= 0.5x VW's events/s. Also printed: the process start
cost of each (a 1-event file), and river-pa's in-process split into reading and learning.

    PYTHONPATH=. python benchmarks/bench_evaluate.py [--events N] [--repeats R]

"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

import streams  # noqa: E402


def to_vw(stream, path) -> None:
    """The stream in VW's text format, with the libsvm file's indices and values."""
    with open(path, "w") as f:
        for x, y in stream:
            feats = " ".join(f"{int(k[1:]) + 1}:{v!r}" for k, v in x.items())
            f.write(f"{'1' if y else '-1'} | {feats}\n")


def river_pa_command(path):
    return [sys.executable, "-m", "river_pa", "evaluate", path, "--quiet"]


def vw_command(path):
    return [sys.executable, "-m", "vowpalwabbit", "-d", path, "--loss_function", "hinge", "-b",
            "18", "--quiet"]


def timed(command) -> float:
    env = {**os.environ, "PYTHONPATH": ROOT}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed: {done.stderr[-2000:]}")
    return seconds


def in_process_split(path) -> tuple[float, float]:
    """(seconds to read the libsvm file, seconds to evaluate it) inside one process."""
    from river_pa import PAClassifier
    from river_pa.evaluate import datasets
    from river_pa.evaluate.job import evaluate

    start = time.perf_counter()
    data = datasets.load(path)
    loaded = time.perf_counter()
    evaluate(data, PAClassifier(), ["Accuracy", "F1", "LogLoss"])
    return loaded - start, time.perf_counter() - loaded


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    stream = streams.sparse(n=args.events)
    with tempfile.TemporaryDirectory() as tmp:
        svm, vw = os.path.join(tmp, "sparse.svm"), os.path.join(tmp, "sparse.vw")
        streams.to_libsvm(stream, svm)
        to_vw(stream, vw)
        tiny_svm, tiny_vw = os.path.join(tmp, "tiny.svm"), os.path.join(tmp, "tiny.vw")
        streams.to_libsvm(stream[:1], tiny_svm)
        to_vw(stream[:1], tiny_vw)
        mib = os.path.getsize(svm) / 2**20, os.path.getsize(vw) / 2**20
        print(f"sparse stream: {len(stream):,} events, libsvm file {mib[0]:.1f} MiB, "
              f"VW file {mib[1]:.1f} MiB")
        for command in (river_pa_command(svm), vw_command(vw)):  # warm-up: JIT cache, page cache
            timed(command)
        ours, theirs, ours_start, theirs_start = [], [], [], []
        for _ in range(args.repeats):
            ours.append(timed(river_pa_command(svm)))
            theirs.append(timed(vw_command(vw)))
            ours_start.append(timed(river_pa_command(tiny_svm)))
            theirs_start.append(timed(vw_command(tiny_vw)))
        read, learn = in_process_split(svm)
    n = len(stream)
    med = statistics.median
    print(f"{'system':<42} {'seconds':>8} {'events/s':>12}")
    for label, times in (("river-pa evaluate (whole process, warm)", ours),
                         ("VW driver (whole process)", theirs)):
        print(f"{label:<42} {med(times):>8.3f} {n / med(times):>12,.0f}")
    print(f"process start (1-event file): river-pa {med(ours_start):.3f} s, "
          f"VW {med(theirs_start):.3f} s")
    print(f"river-pa in one process: read libsvm {read:.3f} s, evaluate {learn:.3f} s "
          f"({n / learn:,.0f} events/s)")
    ratio = med(theirs) / med(ours)
    print(f"ratio river-pa / VW events/s: {ratio:.2f}x (target >= 0.5x: "
          f"{'met' if ratio >= 0.5 else 'MISSED'})")


if __name__ == "__main__":
    main()
