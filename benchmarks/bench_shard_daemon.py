"""Sharded learners in the daemon (`serve --role learn --shards N`, issue 21) against one learner,
in one run: CPU seconds per labelled event summed over the shards, labelled events/s, and the
progressive accuracy beside the simulation's (`river-pa evaluate --shards N --mix-every K`).

Each repeat sends elec2's first `--events` rows (labels 100 events late, keyed by event id, on
6 partitions) to fresh topics, then, in turn, one learner (`--shards 1`) and N shards (one
process each) drain them. Measured between the reports where the learned labels (summed over
the processes) pass a tenth and nine tenths of the stream: the wall time, and the user +
system CPU of the processes (/proc) over the same span. The accuracy is
each process's progressive accuracy weighted by its labels (the shards predict with their own
model between mixes, as the simulation's shards do), beside `evaluate --shards` on the same rows
(`--shard-by round-robin` and `key`: neither is Kafka's partitioner, and its K counts labels
over all shards, not ceil(K/N) of each: a reference, not the same run) and beside `replayed`,
the shards' own rounds computed in one process (the same split and rounds: the daemon's figure
should be its own).

Targets of issue 21: CPU per labelled event summed over the shards <= 1.15x one learner's;
2 shards on these 2 cores, broker included, >= 1.5x one learner's labelled events/s; the final
accuracy within 0.2 points of the simulation's for the same N and K.

Run: ``python benchmarks/bench_shard_daemon.py [--events 40000] [--shards 2] [--mix-every
1000,10000] [--repeats 3]`` (needs a broker: scripts/kafka.sh start; RIVER_PA_KAFKA_BOOTSTRAP
overrides the address).

"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kafka import (  # noqa: E402
    BOOTSTRAP, DELAY, ELEC2, PARTITIONS, cpu_seconds, make_topics, progress, role, stop,
)
from kafka import KafkaProducer  # noqa: E402

from river_pa.connectors.replay import elec2, records, send_all  # noqa: E402
from river_pa.registry import make_model  # noqa: E402

# the span measured ends at this share of the labels learned: the stream's last labels wait
# for the merge (a partition read to its end is waited for, --merge-idle-ms) about 5 s on any
# learner, which is no figure of its throughput
END = 0.9


def reports(workdir: Path) -> list[dict]:
    path = workdir / "report.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def drain(events: str, labels: str, n: int, shards: int, k: int, logs: Path, tag: str) -> dict:
    """Start `shards` learner processes (one with --shards 1) on the topics; the span from a
    tenth of the labels learned to all, its CPU and the weighted progressive accuracy."""
    group = f"{events}-{tag}"
    procs, dirs = {}, []
    extra = ("--shards", str(shards), "--mix-every", str(k), "--mix-seconds", "1",
             "--report-seconds", "0.05", "--state-topic", f"{group}.state",
             "--model-topic", f"{group}.model")
    for s in range(shards):
        workdir = Path(tempfile.mkdtemp(dir=logs, prefix=f"{tag}-{s}-"))
        log = logs / f"{tag}-{s}.log"
        procs[role("learn", events, labels, f"{events}-unused", group, str(workdir), log,
                   *extra)] = log
        dirs.append(workdir)
    start = cpu_at = wall = None
    last, learned_before = time.monotonic(), -1
    try:
        while True:
            last_reports = [r[-1] if r else None for r in map(reports, dirs)]
            learned = sum(r["learned"] for r in last_reports if r)
            if start is None and learned >= n // 10:
                start, cpu_at = time.monotonic(), cpu_seconds(procs)
            if learned >= END * n and wall is None:
                wall, cpu = time.monotonic() - start, cpu_seconds(procs) - cpu_at
            if learned >= n:  # the accuracy: every label (the stream's tail is slow to merge)
                break
            if learned != learned_before:
                learned_before, last = learned, time.monotonic()
            for proc, log in procs.items():
                progress(f"{tag} learning", learned, n, last, proc, log)
            time.sleep(0.02)
    finally:
        for proc in procs:
            stop(proc)
    final = [reports(d)[-1] for d in dirs]
    hits = sum(r["metrics"]["Accuracy"] * r["labelled"] for r in final)
    span = int(END * n) - n // 10
    return {"rate": span / wall, "cpu_per_event": cpu / span,
            "accuracy": hits / sum(r["labelled"] for r in final)}


def replayed(rows, shards: int, k: int) -> float:
    """The progressive accuracy the shards' rounds give on this stream, in one process: shard s
    takes the records of the partitions p with p mod N = s (Kafka's default partitioner:
    murmur2 of the key), in the merge's order; each round it predicts its events and learns
    its labels up to its ceil(K/N)-th label (or its last), then the shards continue from
    their mix, as the daemon's do on a stream written before they start."""
    from kafka.partitioner.default import murmur2

    from river_pa.mixing import mix

    def shard(rid: str) -> int:
        return (murmur2(rid.encode()) & 0x7FFFFFFF) % PARTITIONS % shards

    seqs = [[] for _ in range(shards)]
    for kind, rid, value, _ in records(rows, DELAY):
        seqs[shard(rid)].append((kind, rid, value))
    base = make_model("PAClassifier", {})
    models, at, pending = [base.clone() for _ in seqs], [0] * shards, {}
    hits = labelled = 0
    per_round = -(-k // shards)
    while any(at[s] < len(seqs[s]) for s in range(shards)):
        weights = []
        for s, model in enumerate(models):
            learned = 0
            while at[s] < len(seqs[s]) and learned < per_round:
                kind, rid, value = seqs[s][at[s]]
                at[s] += 1
                if kind == "event":
                    pending[rid] = (value["x"], model.predict_one(value["x"]))
                    continue
                x, y_pred = pending.pop(rid)
                hits += y_pred == value["y"]
                labelled += 1
                model.learn_one(x, value["y"])
                learned += 1
            weights.append(learned)
        mixed = mix(models, weights)
        models = [pickle.loads(pickle.dumps(mixed)) for _ in models]
    return hits / labelled


def simulated(rows, shards: int, k: int, shard_by: str) -> float:
    from river_pa.evaluate.datasets import Data
    from river_pa.evaluate.params import build_model
    from river_pa.evaluate.shards import evaluate_shards

    data = Data("elec2", "binary", [y for _, y in rows], [x for x, _ in rows])
    result, _ = evaluate_shards(data, build_model(None, {}, "binary"), ["Accuracy"], shards, k,
                                shard_by, delay=DELAY)
    return result.values["Accuracy"]


def spread(values, fmt="{:.2f}") -> str:
    return f"{fmt.format(min(values))}/{fmt.format(statistics.median(values))}/" \
           f"{fmt.format(max(values))}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--mix-every", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ks = [int(k) for k in args.mix_every.split(",")]
    rows = elec2(str(ELEC2), args.events)
    n = len(rows)
    logs = Path(tempfile.mkdtemp(prefix="bench_shard_daemon-"))
    print(f"logs in {logs}; {n:,} events of elec2, {args.shards} shards, broker {BOOTSTRAP}")
    runs = {("one", None): [], **{("shards", k): [] for k in ks}}
    for repeat in range(args.repeats):
        events, labels = make_topics(f"bsd-{uuid.uuid4().hex[:8]}")
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20)
        send_all(producer, records(rows, DELAY), events, labels)
        producer.close()
        runs["one", None].append(drain(events, labels, n, 1, 1000, logs, f"one{repeat}"))
        for k in ks:
            runs["shards", k].append(drain(events, labels, n, args.shards, k, logs,
                                           f"s{k}-{repeat}"))
        print(f"repeat {repeat + 1}: " + "; ".join(
            f"{what}{'' if k is None else f' K={k}'} {r[-1]['rate']:,.0f}/s "
            f"{r[-1]['cpu_per_event'] * 1e6:.0f} us" for (what, k), r in runs.items()),
              flush=True)
    one = runs["one", None]
    print(f"\none learner: {spread([r['rate'] for r in one], '{:,.0f}')} labelled events/s, "
          f"{spread([r['cpu_per_event'] * 1e6 for r in one], '{:.0f}')} us CPU each, "
          f"accuracy {one[0]['accuracy']:.4f}")
    for k in ks:
        got = runs["shards", k]
        rate = [g["rate"] / o["rate"] for g, o in zip(got, one)]
        cpu = [g["cpu_per_event"] / o["cpu_per_event"] for g, o in zip(got, one)]
        sims = {by: simulated(rows, args.shards, k, by) for by in ("round-robin", "key")}
        sims["the shards' rounds replayed"] = replayed(rows, args.shards, k)
        print(f"{args.shards} shards, K={k}: events/s {spread(rate)}x one learner's "
              f"(target >= 1.5x), CPU per labelled event {spread(cpu)}x (target <= 1.15x); "
              f"accuracy {got[0]['accuracy']:.4f} ({100 * (got[0]['accuracy'] - one[0]['accuracy']):+.2f} "
              f"points vs one learner), simulation " + ", ".join(
                  f"{by} {v:.4f}" for by, v in sims.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
