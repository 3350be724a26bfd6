"""The accuracy cost of sharded learning with iterative parameter mixing (issue 21, phase 1).

`river-pa evaluate --shards N --mix-every K` on every shared binary and multiclass set (a9a,
phishing-full, mushrooms, elec2, usps, mnist-5k), with `evaluate`'s default learner for the
task (`PAClassifier()`: PA-I, C = 1; `PAMultiClassifier()`: PA-I, C = 1), split round-robin
(or `--shard-by key`), in file order and in `--shuffles` seeded shuffles (numpy's
`default_rng(seed).permutation`, seeds 1..). Progressive accuracy, as `evaluate` reports it
(`evaluate_shards`: River's loop). With `--passes P` each order is followed by P - 1 more
passes over the set, each a fresh shuffle (seeds 1000 order + pass), and the figures are
those of the last pass alone: how much of the cost is the slower start.

Prints, per set, N and K: the progressive accuracy (median over the orders) and its
difference to one learner (N = 1) in points, median [min, max] over the orders (each order
against N = 1 on the same order). The target of issue 21: N = 8, K = 1,000 within 0.5 points
of one learner on every set (median over the orders).

Run: ``python benchmarks/bench_shards.py [--shuffles 5] [--sets a9a,usps] [--shards 1,2,4,8]
[--mix-every 100,1000] [--limit N] [--shard-by key] [--passes 3]`` (the full grid: about 5
minutes on one busy core).

"""

from __future__ import annotations

import argparse
import time

import numpy as np

from river_pa.evaluate import datasets
from river_pa.evaluate.params import build_model
from river_pa.evaluate.shards import evaluate_shards

SETS = ("a9a", "phishing-full", "mushrooms", "elec2", "usps", "mnist-5k")


def orders(data, shuffles: int, limit: int | None, passes: int):
    """Data of the file order and each seeded shuffle (the first `limit` events), each
    followed by `passes` - 1 shuffled passes."""
    x, y = data.x, data.y
    n = min(len(y), limit or len(y))
    for seed in range(shuffles + 1):
        idx = [np.arange(n) if seed == 0 else np.random.default_rng(seed).permutation(len(y))[:n]]
        idx += [np.random.default_rng(1000 * seed + p).permutation(idx[0]) for p in
                range(1, passes)]
        idx = np.concatenate(idx).tolist()
        yield datasets.Data(data.name, data.task, [y[i] for i in idx], [x[i] for i in idx])


def accuracy(data, shards: int, k: int, shard_by: str, passes: int) -> float:
    """The progressive accuracy over the last pass of `data`."""
    n = len(data.y) // passes
    result, _ = evaluate_shards(data, build_model(None, {}, data.task), ["Accuracy"], shards, k,
                                shard_by, every=n)
    hits = [row.values["Accuracy"] * row.step for row in result.rows]
    return (hits[-1] - (hits[-2] if passes > 1 else 0.0)) / n


def run_set(name: str, args, grid_n: list, grid_k: list) -> None:
    data = datasets.load(name)
    start = time.perf_counter()
    acc: dict = {}
    for events in orders(data, args.shuffles, args.limit, args.passes):
        one = accuracy(events, 1, max(grid_k), args.shard_by, args.passes)
        for n in grid_n:
            for k in grid_k:
                acc.setdefault((n, k), []).append(
                    one if n == 1 else accuracy(events, n, k, args.shard_by, args.passes))
        acc.setdefault("one", []).append(one)
    n_events = min(len(data.y), args.limit or len(data.y))
    print(f"\n{name} ({data.task}): {n_events} events, {args.shuffles + 1} orders, "
          f"{args.passes} passes, {time.perf_counter() - start:.0f} s")
    print(f"{'N':>4} {'K':>6}  {'accuracy':>8}  {'vs N=1 (points): median [min, max]':>36}")
    for n in grid_n:
        for k in grid_k:
            a = np.array(acc[(n, k)])
            d = 100 * (a - np.array(acc["one"]))
            print(f"{n:>4} {k:>6}  {np.median(a):8.4f}  {np.median(d):+16.2f} "
                  f"[{d.min():+.2f}, {d.max():+.2f}]", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shuffles", type=int, default=5)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--shards", default="1,2,4,8,16,64")
    parser.add_argument("--mix-every", default="100,1000,10000")
    parser.add_argument("--limit", type=int, help="the first N events of each order only")
    parser.add_argument("--shard-by", choices=["round-robin", "key"], default="round-robin")
    parser.add_argument("--passes", type=int, default=1, help="figures of the last pass")
    args = parser.parse_args(argv)
    grid_n = [int(v) for v in args.shards.split(",")]
    grid_k = [int(v) for v in args.mix_every.split(",")]
    print(f"progressive accuracy with N shards mixed every K labelled events ({args.shard_by}); "
          "difference to one learner on the same order")
    for name in args.sets.split(","):
        run_set(name, args, grid_n, grid_k)


if __name__ == "__main__":
    main()
