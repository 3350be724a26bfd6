"""Benchmark `river-pa serve` against a bare kafka-python consume-then-produce relay.

    PYTHONPATH=. python benchmarks/bench_kafka.py [--events 20000] [--rate 5000] [--log-dir DIR]

1. Throughput: the same topic of Elec2 events (labels inline) is drained by (a) a relay that
   polls, produces each value to an output topic and commits explicit offsets per batch, and
   (b) the daemon (predict, emit, learn, checkpoint, commit). Both are timed in steady state,
   from their output number n/10 to their last (this leaves out connection set-up and the
   model's JIT compilation); the ratio daemon / relay is printed.
2. Latency: events are offered at `--rate` events/s for `--seconds` with the daemon running;
   a reader measures produce -> prediction readable (wall clock at read minus the event's
   `ts`, stamped when it was sent) and prints p50 / p99.

Needs a broker (scripts/kafka.sh start; RIVER_PA_KAFKA_BOOTSTRAP overrides the address).
Each daemon writes its log to a file in `--log-dir` (a fresh temporary folder by default,
printed first); every wait is bounded: a daemon that exits, or a stream that makes no
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

from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import OffsetAndMetadata

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from river_pa.connectors.replay import elec2, records, send_all  # noqa: E402

BOOTSTRAP = os.environ.get("RIVER_PA_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
ELEC2 = Path(os.environ.get("ELEC2_PATH", ROOT.parents[1] / "shared" / "data" / "elec2" / "elec.csv.gz"))
if not ELEC2.exists():
    ELEC2 = ROOT.parent / "shared" / "data" / "elec2" / "elec.csv.gz"


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


def relay(source: str, sink: str, n: int) -> float:
    """Events/s of a bare consume-then-produce relay with explicit commits per batch."""
    consumer = KafkaConsumer(source, bootstrap_servers=BOOTSTRAP, group_id=f"relay-{uuid.uuid4()}",
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             max_poll_records=500)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", linger_ms=5)
    seen, first, last_progress = 0, None, time.monotonic()
    while seen < n:
        progress("relay", seen, n, last_progress)
        batch = consumer.poll(timeout_ms=200)
        last_progress = time.monotonic() if batch else last_progress
        for tp, recs in batch.items():
            for r in recs:
                producer.send(sink, key=r.key, value=r.value)
            seen += len(recs)
            producer.flush()
            consumer.commit({tp: OffsetAndMetadata(recs[-1].offset + 1, "", -1)})
            if first is None and seen >= n // 10:
                first, first_seen = time.monotonic(), seen
    elapsed = time.monotonic() - first
    consumer.close()
    producer.close()
    return (n - first_seen) / elapsed


def serve(events: str, preds: str, workdir: str, log: Path) -> subprocess.Popen:
    """Start the daemon on `events` (labels inline, default PAClassifier), logging to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(
        [sys.executable, "-m", "river_pa.connectors.cli", "--bootstrap-servers", BOOTSTRAP,
         "--events-topic", events, "--predictions-topic", preds, "--group-id", f"{preds}-g",
         "--metrics-topic", f"{events}-metrics", "--dead-letter-topic", f"{events}-dlq",
         "--report-path", "report.jsonl", "--checkpoint-path", "state.ckpt"],
            cwd=workdir, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out, stderr=subprocess.STDOUT)


def read_predictions(topic: str, n: int, on_record, proc, log: Path) -> None:
    """Read `n` predictions from `topic`, calling `on_record(value, now_ms)` for each;
    `Stalled` if the daemon `proc` exits or stalls first."""
    consumer = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    seen, last_progress = 0, time.monotonic()
    try:
        while seen < n:
            progress(f"predictions of {topic}", seen, n, last_progress, proc, log)
            for recs in consumer.poll(timeout_ms=200).values():
                now = time.time() * 1000
                for r in recs:
                    on_record(json.loads(r.value), now)
                seen += len(recs)
                last_progress = time.monotonic()
    finally:
        consumer.close()


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if the daemon is not gone within STALL_S."""
    proc.terminate()
    try:
        proc.wait(timeout=STALL_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def daemon_throughput(events: str, n: int, workdir: str, preds: str, log: Path) -> float:
    """Events/s of the daemon draining `events` into `preds`, from its prediction n/10 to its
    last (each run has its own consumer group, named after `preds`)."""
    stamps = []
    proc = serve(events, preds, workdir, log)
    try:
        read_predictions(preds, n, lambda v, now: stamps.append(v["predicted_at_ms"]), proc, log)
    finally:
        stop(proc)
    stamps.sort()
    steady = stamps[n // 10:]
    return len(steady) / ((steady[-1] - steady[0]) / 1000)


def offer(events: str, stream: list, rate: float, held) -> None:
    """Produce `stream` at `rate` events/s, each stamped with its send time (own process)."""
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=1)
    started = time.monotonic()
    for i, (x, y) in enumerate(stream):
        value = {"id": f"l{i}", "x": x, "y": y, "ts": int(time.time() * 1000)}
        producer.send(events, key=value["id"].encode(), value=json.dumps(value).encode())
        ahead = started + (i + 1) / rate - time.monotonic()
        if ahead > 0.002:  # sleep in steps of a few ms: a sleep per event costs more than it waits
            time.sleep(ahead)
    producer.flush()
    held.value = len(stream) / (time.monotonic() - started)


def latency(rows, rate: float, seconds: float, workdir: str,
            log: Path) -> tuple[float, float, float]:
    """p50, p99 (ms) of produce -> prediction readable at `rate` events/s, and the rate held."""
    events = f"bench-lat-{uuid.uuid4().hex[:8]}"
    preds = f"{events}-preds"
    n = int(rate * seconds)
    stream = [rows[i % len(rows)] for i in range(n)]
    lat: list[float] = []
    proc = serve(events, preds, workdir, log)
    producer = None
    try:
        warm = KafkaProducer(bootstrap_servers=BOOTSTRAP)
        send_all(warm, records(stream[:1], None, id_prefix="warm"), events, None)
        read_predictions(preds, 1, lambda v, now: None, proc, log)  # it has joined and predicts
        held = multiprocessing.Value("d", 0.0)
        producer = multiprocessing.Process(target=offer, args=(events, stream, rate, held))
        producer.start()
        read_predictions(preds, n + 1, lambda v, now: lat.append(now - v["event_ts"]), proc, log)
        producer.join(timeout=STALL_S)
    finally:
        if producer is not None and producer.is_alive():
            producer.terminate()
        stop(proc)
    lat = sorted(lat[1:])
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)], held.value


def main() -> int:
    """Run both measurements and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--rate", type=float, default=5_000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="throughput runs (medians shown)")
    parser.add_argument("--log-dir", type=Path, help="where each daemon writes its log "
                        "(default: a new temporary folder)")
    parser.add_argument("--stall-seconds", type=float, default=STALL_S,
                        help="stop with the daemon's log after this long without progress")
    args = parser.parse_args()
    globals()["STALL_S"] = args.stall_seconds
    logs = args.log_dir or Path(tempfile.mkdtemp(prefix="bench_kafka-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"daemon logs in {logs}")
    try:
        return run(args, logs)
    except Stalled as exc:
        print(f"bench_kafka: {exc}", file=sys.stderr)
        return 1


def run(args, logs: Path) -> int:
    """Both measurements, interleaved throughput runs first."""
    rows = elec2(str(ELEC2))
    stream = [rows[i % len(rows)] for i in range(args.events)]
    events = f"bench-{uuid.uuid4().hex[:8]}"
    send_all(KafkaProducer(bootstrap_servers=BOOTSTRAP, linger_ms=5), records(stream, None),
             events, None)
    bare, daemon = [], []
    for i in range(args.repeats):  # interleaved, so that a noisy moment hits both
        bare.append(relay(events, f"{events}-relay{i}", args.events))
        with tempfile.TemporaryDirectory() as workdir:
            daemon.append(daemon_throughput(events, args.events, workdir, f"{events}-preds{i}",
                                            logs / f"daemon-throughput{i}.log"))
    print(f"throughput runs: relay {[round(b) for b in bare]}, daemon {[round(d) for d in daemon]}")
    bare_m, daemon_m = statistics.median(bare), statistics.median(daemon)
    ratios = sorted(d / b for d, b in zip(daemon, bare))  # each daemon run over the relay before it
    print(f"throughput: relay {bare_m:,.0f} events/s, daemon {daemon_m:,.0f} events/s, "
          f"ratio of medians {daemon_m / bare_m:.2f}; per-run ratio min / median / max "
          f"{ratios[0]:.2f} / {statistics.median(ratios):.2f} / {ratios[-1]:.2f} "
          f"({args.repeats} runs)")
    with tempfile.TemporaryDirectory() as workdir:
        p50, p99, held = latency(rows, args.rate, args.seconds, workdir, logs / "daemon-latency.log")
        print(f"latency at {held:,.0f} events/s offered: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
