"""Benchmark the roles of `river-pa serve` against bare kafka-python clients, in one run.

    PYTHONPATH=. python benchmarks/bench_kafka.py [--events 20000] [--repeats 3] [--log-dir DIR]
    PYTHONPATH=. python benchmarks/bench_kafka.py --clients   # the two Kafka clients compared
    PYTHONPATH=. python benchmarks/bench_kafka.py --baseline 12866b4 [--kafka-client confluent]
    PYTHONPATH=. python benchmarks/bench_kafka.py --clients --baseline 12866b4

With `--clients` the predictor on kafka-python and on confluent-kafka and bare relays of both
clients are compared in CPU time instead (benchmarks/bench_kafka_clients.py says how).

Each repeat fills a 6-partition events topic with Elec2 events and a 6-partition labels topic
with their labels (DELAY events late), then measures, interleaved so a noisy moment hits all:

1. Anchors: a bare producer (linger 20 ms) writing the events' values, pre-encoded, to a topic
   (records/s, first send to flush), and a bare consumer reading both topics, no decoding
   (events/s: records/s over 2, from its record n/10 to the last).
2. One learner (`--role learn`) draining both topics: learned events/s between its reports
   (one per 1,000 events) at n/10 and at 9n/10 learned (at the stream's end the merge waits
   `--merge-idle-ms` for each partition in turn, 6.5 s on 6 + 6 partitions: not throughput);
   target >= 0.5x the consumer.
3. One predictor (`--role predict`, the learner's model) draining the events topic: events/s
   from its prediction n/10 to its last; target >= 0.6x the producer.
4. CPU seconds per 1,000 events summed over processes (utime + stime from /proc): one
   `--role both` process vs a learner and 2 predictors, each on a stream of its own; after a
   warm-up stream of 2,000 events is served (start-up and JIT left out), N more are produced at
   once and CPU is counted until all are predicted and learned; target 2+1 <= 1.3x both.
5. Latency: events offered at `--rate` events/s for `--seconds` to one predictor; a reader
   measures produce -> prediction readable (wall clock at read minus the event's `ts`,
   stamped when it was sent) and prints p50 / p99.

With `--baseline REF` the daemon of git commit REF (its tree exported to a temporary folder)
is measured beside this checkout's, on kafka-python, as issue 18's "today's" anchor: its
learner (2.) and its predictor (3., on the model its learner published), with the ratios of
this checkout's roles to them (targets >= 4x: the learner, and the predictor on
confluent-kafka); with `--clients` its predictor in CPU time. `--kafka-client` runs this
checkout's roles of 2.-5. on that client.

Needs a broker (scripts/kafka.sh start; RIVER_PA_KAFKA_BOOTSTRAP overrides the address) and
Linux (/proc). Each daemon writes its log to a file in `--log-dir` (a fresh temporary folder by
default, printed first); every wait is bounded: a daemon that exits, or a stream that makes no
progress for `--stall-seconds`, stops the bench with status 1 and the tail of that log (a run
once hung for 600 s with no log at all).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import TopicPartition

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from river_pa.connectors.replay import elec2, records, send_all  # noqa: E402

BOOTSTRAP = os.environ.get("RIVER_PA_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
ELEC2 = Path(os.environ.get("ELEC2_PATH", ROOT.parents[1] / "shared" / "data" / "elec2" / "elec.csv.gz"))
if not ELEC2.exists():
    ELEC2 = ROOT.parent / "shared" / "data" / "elec2" / "elec.csv.gz"

PARTITIONS = 6
DELAY = 100  # labels this many events late
WARM = 2_000  # events of the warm-up stream of the CPU measurement
STALL_S = 60.0  # --stall-seconds


class Stalled(RuntimeError):
    """A wait of the bench made no progress (the message says which, with the daemon's log)."""


def tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def progress(what: str, seen: int, n: int, last_progress: float, proc=None, log=None) -> None:
    """Raise `Stalled` if the daemon `proc` exited or nothing came for `STALL_S` seconds."""
    if proc is not None and proc.poll() is not None:
        raise Stalled(f"{what}: the daemon exited with {proc.returncode} after {seen} of {n}; "
                      f"the end of {log}:\n{tail(log)}")
    if time.monotonic() - last_progress > STALL_S:
        end = f"; the end of {log}:\n{tail(log)}" if log else ""
        raise Stalled(f"{what}: no progress for {STALL_S:.0f} s at {seen} of {n}{end}")


def make_topics(base: str) -> tuple[str, str]:
    """Create `base`-events and `base`-labels with PARTITIONS partitions each."""
    names = (f"{base}-events", f"{base}-labels")
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    try:
        admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in names])
    finally:
        admin.close()
    return names


def bare_producer(topic: str, values: list[bytes]) -> float:
    """Records/s of a bare producer (linger 20 ms) sending pre-encoded `values`, first send
    to flush (its connection and metadata are set up before the clock starts)."""
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20)
    producer.send(topic, b"warm").get(timeout=STALL_S)
    started = time.monotonic()
    for value in values:
        producer.send(topic, value)
    producer.flush()
    elapsed = time.monotonic() - started
    producer.close()
    return len(values) / elapsed


def bare_consumer(topics: tuple[str, ...], n: int) -> float:
    """Events/s of a bare consumer reading all partitions of `topics` (n events and n labels)
    from the beginning, no decoding: records/s / 2 from its record n/10 to its last."""
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, enable_auto_commit=False)
    parts = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    seen, first, last_progress = 0, None, time.monotonic()
    try:
        while seen < 2 * n:
            progress("bare consumer", seen, 2 * n, last_progress)
            for recs in consumer.poll(timeout_ms=200).values():
                seen += len(recs)
                last_progress = time.monotonic()
            if first is None and seen >= n // 5:
                first, first_seen = time.monotonic(), seen
        return (seen - first_seen) / 2 / (time.monotonic() - first)
    finally:
        consumer.close()


def serve(workdir: str, log: Path, *args: str, root: Path = ROOT) -> subprocess.Popen:
    """Start `river-pa serve` of the checkout `root` with `args`, logging to `log`, reporting
    every 1,000 events or 0.2 s."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "river_pa.connectors.cli", "--bootstrap-servers", BOOTSTRAP,
             "--report-path", "report.jsonl", "--checkpoint-path", "state.ckpt",
             "--report-every", "1000", "--report-seconds", "0.2", *args],
            cwd=workdir, env={**os.environ, "PYTHONPATH": str(root)},
            stdout=out, stderr=subprocess.STDOUT)


def role(name: str, events: str, labels: str, preds: str, group: str, workdir: str,
         log: Path, *extra: str, root: Path = ROOT, client: str | None = None) -> subprocess.Popen:
    """A daemon (of the checkout `root`, on Kafka `client`: the default when None) in `--role
    name` on `events` (+ `labels`), predictions to `preds`."""
    args = ["--role", name, "--events-topic", events, "--labels-topic", labels,
            "--predictions-topic", preds, "--group-id", group, "--client-id", log.stem,
            "--model-topic", f"{events}.model", "--metrics-topic", f"{events}-metrics",
            "--dead-letter-topic", f"{events}-dlq", *(["--kafka-client", client] if client
                                                      else []), *extra]
    return serve(workdir, log, *args, root=root)


def checkout(ref: str) -> Path:
    """The tree of git commit `ref` of this repository in a new temporary folder, importable
    with PYTHONPATH set to it (its connectors/ as river_pa.connectors, as installed)."""
    folder = Path(tempfile.mkdtemp(prefix=f"bench_kafka-{ref}-"))
    tree = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=tree, check=True)
    (folder / "river_pa" / "connectors").symlink_to(folder / "connectors")
    return folder


def read_predictions(topic: str, n: int, on_record, procs: dict) -> None:
    """Read `n` predictions from `topic`, calling `on_record(value, now_ms)` for each;
    `Stalled` if a daemon of `procs` ({process: log}) exits or nothing comes first."""
    consumer = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    seen, last_progress = 0, time.monotonic()
    try:
        while seen < n:
            for proc, log in procs.items():
                progress(f"predictions of {topic}", seen, n, last_progress, proc, log)
            for recs in consumer.poll(timeout_ms=200).values():
                now = time.time() * 1000
                for r in recs:
                    on_record(json.loads(r.value), now)
                seen += len(recs)
                last_progress = time.monotonic()
    finally:
        consumer.close()


def wait_report(workdir: str, predicate, proc, log: Path) -> list[dict]:
    """The daemon's report lines once the last satisfies `predicate` (`Stalled` if it exits
    or its report stops growing for STALL_S)."""
    path, size, last_progress = Path(workdir) / "report.jsonl", -1, time.monotonic()
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        reports = [json.loads(line) for line in lines if line.strip()]
        if reports and predicate(reports[-1]):
            return reports
        if len(reports) != size:
            size, last_progress = len(reports), time.monotonic()
        progress(f"report of {log.stem}", size, 0, last_progress, proc, log)
        time.sleep(0.05)


def wait_group(group: str, members: int, procs: dict) -> None:
    """Wait until `group` is Stable with `members` members, each owning a partition."""
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    last_progress = time.monotonic()
    try:
        while True:
            info = admin.describe_groups([group])[group]
            owners = [m for m in info["members"] if (m["member_assignment"] or {}).get(
                "assigned_partitions")]
            if info["group_state"] == "Stable" and len(owners) == members:
                return
            for proc, log in procs.items():
                progress(f"group {group}", len(owners), members, last_progress, proc, log)
            time.sleep(0.1)
    finally:
        admin.close()


def cpu_seconds(procs) -> float:
    """User + system CPU seconds so far of the processes `procs` (from /proc/PID/stat)."""
    total = 0
    for proc in procs:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if the daemon is not gone within STALL_S."""
    proc.terminate()
    try:
        proc.wait(timeout=STALL_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def steady_rate(stamps_ms: list[float], n: int) -> float:
    """Events/s from the stamp n/10 to the last."""
    steady = sorted(stamps_ms)[n // 10:]
    return len(steady) / ((steady[-1] - steady[0]) / 1000)


def learner_throughput(events: str, labels: str, n: int, workdir: str, log: Path,
                       **daemon) -> float:
    """Learned events/s of one learner (`daemon`: `role`'s root and client) draining both
    topics, between its first reports with n/10 and with 9n/10 learned (one every 50 ms; at
    the stream's end each partition waits --merge-idle-ms in turn); it publishes the model the
    predictors use."""
    proc = role("learn", events, labels, f"{events}-unused", f"{events}-learn", workdir, log,
                "--report-seconds", "0.05", **daemon)
    try:
        reports = wait_report(workdir, lambda r: r["learned"] >= n, proc, log)
    finally:
        stop(proc)
    a = next(r for r in reports if r["learned"] >= n // 10)
    b = next(r for r in reports if r["learned"] >= n - n // 10)
    return (b["learned"] - a["learned"]) / ((b["time_ms"] - a["time_ms"]) / 1000)


def predictor_throughput(events: str, labels: str, n: int, workdir: str, log: Path,
                         client: str | None = None, root: Path = ROOT) -> float:
    """Events/s of one predictor (of the checkout `root`) draining `events`, from its
    prediction n/10 to its last."""
    stamps: list[float] = []
    preds = f"{events}-preds-{log.stem}"
    proc = role("predict", events, labels, preds, preds, workdir, log, client=client, root=root)
    try:
        read_predictions(preds, n, lambda v, now: stamps.append(v["predicted_at_ms"]), {proc: log})
    finally:
        stop(proc)
    return steady_rate(stamps, n)


def cpu_per_1000(rows, n: int, split: bool, workdir: str, logs: Path, tag: str,
                 client: str | None = None) -> float:
    """CPU seconds per 1,000 events summed over the serving processes: one `--role both`, or
    (`split`) a learner and 2 predictors; counted from the end of a WARM-event warm-up
    stream until n more events are all predicted and learned."""
    events, labels = make_topics(f"bench-cpu-{uuid.uuid4().hex[:8]}")
    preds, group = f"{events}-preds", f"{events}-g"
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20)
    send_all(producer, records(rows[:WARM], DELAY, id_prefix="w"), events, labels)
    procs: dict = {}
    learn_dir = Path(workdir) / f"{tag}-learn"
    learn_dir.mkdir()
    try:
        if split:
            learner = role("learn", events, labels, f"{events}-unused", f"{group}-learn",
                           str(learn_dir), logs / f"{tag}-learner.log", client=client)
        else:
            learner = role("both", events, labels, preds, group, str(learn_dir),
                           logs / f"{tag}-both.log", client=client)
        procs[learner] = logs / f"{tag}-{'learner' if split else 'both'}.log"
        wait_report(str(learn_dir), lambda r: r["learned"] >= WARM, learner, procs[learner])
        if split:
            for k in (1, 2):
                folder = Path(workdir) / f"{tag}-p{k}"
                folder.mkdir()
                proc = role("predict", events, labels, preds, group, str(folder),
                            logs / f"{tag}-p{k}.log", client=client)
                procs[proc] = logs / f"{tag}-p{k}.log"
            wait_group(group, 2, procs)
        read_predictions(preds, WARM, lambda v, now: None, procs)
        before = cpu_seconds(procs)
        send_all(producer, records(rows[WARM:WARM + n], DELAY), events, labels)
        read_predictions(preds, WARM + n, lambda v, now: None, procs)
        wait_report(str(learn_dir), lambda r: r["learned"] >= WARM + n, learner, procs[learner])
        return (cpu_seconds(procs) - before) / n * 1000
    finally:
        for proc in procs:
            stop(proc)
        producer.close()


def offer(events: str, stream: list, rate: float, held) -> None:
    """Produce `stream` at `rate` events/s, each stamped with its send time (own process)."""
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=1)
    started = time.monotonic()
    for i, (x, y) in enumerate(stream):
        value = {"id": f"l{i}", "x": x, "ts": int(time.time() * 1000)}
        producer.send(events, key=value["id"].encode(), value=json.dumps(value).encode())
        ahead = started + (i + 1) / rate - time.monotonic()
        if ahead > 0.002:  # sleep in steps of a few ms: a sleep per event costs more than it waits
            time.sleep(ahead)
    producer.flush()
    held.value = len(stream) / (time.monotonic() - started)


def latency(rows, model_topic: str, rate: float, seconds: float, workdir: str,
            log: Path) -> tuple[float, float, float]:
    """p50, p99 (ms) of produce -> prediction readable at `rate` events/s through one
    predictor (with the model in `model_topic`), and the rate held."""
    events, labels = make_topics(f"bench-lat-{uuid.uuid4().hex[:8]}")
    preds = f"{events}-preds"
    n = int(rate * seconds)
    stream = [rows[i % len(rows)] for i in range(n)]
    lat: list[float] = []
    proc = role("predict", events, labels, preds, f"{events}-g", workdir, log,
                "--model-topic", model_topic)
    producer = None
    try:
        warm = KafkaProducer(bootstrap_servers=BOOTSTRAP)
        send_all(warm, records(stream[:PARTITIONS * 4], None, id_prefix="warm"), events, None)
        read_predictions(preds, PARTITIONS * 4, lambda v, now: None, {proc: log})  # it predicts
        held = multiprocessing.Value("d", 0.0)
        producer = multiprocessing.Process(target=offer, args=(events, stream, rate, held))
        producer.start()
        read_predictions(preds, n + PARTITIONS * 4,
                         lambda v, now: lat.append(now - v["event_ts"]), {proc: log})
        producer.join(timeout=STALL_S)
    finally:
        if producer is not None and producer.is_alive():
            producer.terminate()
        stop(proc)
    lat = sorted(lat[PARTITIONS * 4:])
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)], held.value


def main() -> int:
    """Run the measurements and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=5_000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs (min / median / max shown)")
    parser.add_argument("--log-dir", type=Path, help="where each daemon writes its log "
                        "(default: a new temporary folder)")
    parser.add_argument("--stall-seconds", type=float, default=STALL_S,
                        help="stop with the daemon's log after this long without progress")
    parser.add_argument("--clients", action="store_true", help="compare the Kafka clients "
                        "(benchmarks/bench_kafka_clients.py) instead")
    parser.add_argument("--baseline", metavar="REF", help="also measure the daemon of git "
                        "commit REF on kafka-python (issue 18's anchor: 'today's')")
    parser.add_argument("--kafka-client", help="the Kafka client of this checkout's roles")
    args = parser.parse_args()
    globals()["STALL_S"] = args.stall_seconds
    logs = args.log_dir or Path(tempfile.mkdtemp(prefix="bench_kafka-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"daemon logs in {logs}")
    args.baseline_root = checkout(args.baseline) if args.baseline else None
    try:
        if args.clients:
            sys.path.insert(0, str(Path(__file__).parent))
            import bench_kafka_clients

            bench_kafka_clients.bk.STALL_S = args.stall_seconds
            try:  # its helpers are those of a second copy of this module
                return bench_kafka_clients.run(args, logs)
            except bench_kafka_clients.bk.Stalled as exc:
                raise Stalled(str(exc)) from exc
        return run(args, logs)
    except Stalled as exc:
        print(f"bench_kafka: {exc}", file=sys.stderr)
        return 1


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """min / median / max of `values`."""
    v = sorted(values)
    return " / ".join(fmt.format(x) for x in (v[0], statistics.median(v), v[-1]))


def run(args, logs: Path) -> int:
    """The measurements, each repeat interleaving anchors and roles; latency last."""
    rows = elec2(str(ELEC2))
    n = args.events
    stream = [rows[i % len(rows)] for i in range(n)]
    values = [json.dumps({"id": f"e{i}", "x": x}).encode() for i, (x, _) in enumerate(stream)]
    kinds = ("producer", "consumer", "learner", "predictor", "cpu_both", "cpu_split")
    runs: dict[str, list[float]] = {k: [] for k in kinds + (
        ("baseline_learner", "baseline_predictor") if args.baseline_root else ())}
    client = args.kafka_client
    for i in range(args.repeats):
        events, labels = make_topics(f"bench-{uuid.uuid4().hex[:8]}")
        send_all(KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20),
                 records(stream, DELAY), events, labels)
        with tempfile.TemporaryDirectory() as workdir:
            runs["producer"].append(bare_producer(f"{events}-bare", values))
            runs["consumer"].append(bare_consumer((events, labels), n))
            runs["learner"].append(learner_throughput(events, labels, n, workdir,
                                                      logs / f"learner{i}.log", client=client))
        if args.baseline_root:  # its own copy of the topics: the learner above published
            with tempfile.TemporaryDirectory() as workdir:  # a model to events.model
                base_events, base_labels = make_topics(f"bench-base-{uuid.uuid4().hex[:8]}")
                send_all(KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=20),
                         records(stream, DELAY), base_events, base_labels)
                runs["baseline_learner"].append(learner_throughput(
                    base_events, base_labels, n, workdir, logs / f"baseline-learner{i}.log",
                    root=args.baseline_root))
            with tempfile.TemporaryDirectory() as workdir:  # its learner's model
                runs["baseline_predictor"].append(predictor_throughput(
                    base_events, base_labels, n, workdir, logs / f"baseline-predictor{i}.log",
                    root=args.baseline_root))
        with tempfile.TemporaryDirectory() as workdir:
            runs["predictor"].append(predictor_throughput(events, labels, n, workdir,
                                                          logs / f"predictor{i}.log", client))
        with tempfile.TemporaryDirectory() as workdir:
            runs["cpu_both"].append(cpu_per_1000(rows, n, False, workdir, logs, f"cpu{i}-both",
                                                 client))
            runs["cpu_split"].append(cpu_per_1000(rows, n, True, workdir, logs, f"cpu{i}-split",
                                                  client))
        print(f"run {i + 1}: " + ", ".join(f"{k} {v[-1]:,.3f}" if k.startswith("cpu")
                                            else f"{k} {v[-1]:,.0f}" for k, v in runs.items()),
              flush=True)
    pred = [p / b for p, b in zip(runs["predictor"], runs["producer"])]
    learn = [l / c for l, c in zip(runs["learner"], runs["consumer"])]
    cpu = [s / b for s, b in zip(runs["cpu_split"], runs["cpu_both"])]
    print(f"{n:,} events, {args.repeats} runs, roles on {client or 'kafka-python'}, "
          "min / median / max:")
    print(f"  bare producer {spread(runs['producer'], '{:,.0f}')} records/s; "
          f"bare consumer of both topics {spread(runs['consumer'], '{:,.0f}')} events/s")
    print(f"  one predictor {spread(runs['predictor'], '{:,.0f}')} events/s: "
          f"{spread(pred)}x the bare producer (target >= 0.6)")
    print(f"  one learner {spread(runs['learner'], '{:,.0f}')} events/s: "
          f"{spread(learn)}x the bare consumer (target >= 0.5)")
    if args.baseline_root:
        ahead = [a / b for a, b in zip(runs["learner"], runs["baseline_learner"])]
        print(f"  the learner of {args.baseline} (kafka-python) "
              f"{spread(runs['baseline_learner'], '{:,.0f}')} events/s: this learner "
              f"{spread(ahead)}x it (target >= 4)")
        ahead = [a / b for a, b in zip(runs["predictor"], runs["baseline_predictor"])]
        print(f"  the predictor of {args.baseline} (kafka-python) "
              f"{spread(runs['baseline_predictor'], '{:,.0f}')} events/s: this predictor "
              f"{spread(ahead)}x it (target on confluent-kafka >= 4)")
    print(f"  CPU s per 1,000 events: both {spread(runs['cpu_both'], '{:.3f}')}, learner + 2 "
          f"predictors {spread(runs['cpu_split'], '{:.3f}')}: {spread(cpu)}x (target <= 1.3)")
    with tempfile.TemporaryDirectory() as workdir:
        p50, p99, held = latency(rows, f"{events}.model", args.rate, args.seconds, workdir,
                                 logs / "predictor-latency.log")
        print(f"latency through one predictor at {held:,.0f} events/s offered: "
              f"p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
