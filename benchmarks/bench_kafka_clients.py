"""The predictor on each Kafka client, against bare relays of each client, in CPU time.

    PYTHONPATH=. python benchmarks/bench_kafka.py --clients [--events 20000] [--repeats 3]

Each repeat, interleaved so a noisy moment hits all: a learner (kafka-python) publishes a model
learned on 2,000 events; then each of four consumers of its own 6-partition events topic (the
same Elec2 events: `{"id", "x"}` JSON) is measured alike: the predictor (`--role predict`) on
kafka-python, the predictor on confluent-kafka (`--kafka-client confluent`), and a bare
consume-decode-encode-produce relay of each client (JSON decoded, a prediction-sized JSON
encoded and produced, idempotent producer, no commit). Each is started on a topic holding
WARM events; once their outputs are readable, N more events are produced at once and the
process's CPU (user + system, /proc, its client's threads included) is counted until all are
readable. Printed: CPU microseconds per event, min / median / max, and the ratios of issue 18
(speed = the inverse ratio of CPU per event): the confluent predictor vs the kafka-python one
(target >= 4x), vs the bare confluent relay (target >= 0.3x); the kafka-python predictor vs the
bare kafka-python relay (target >= 0.7x). With `--baseline REF` the predictor of git commit
REF on kafka-python is measured alike (`BASELINE`), the anchor of the first target ("today's").
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import bench_kafka as bk
from kafka import KafkaProducer

WARM = 2_000
KINDS = ("predictor kafka-python", "predictor confluent", "relay kafka-python", "relay confluent")
BASELINE = "baseline kafka-python"  # the predictor of --baseline REF


def relay(client: str, bootstrap: str, events: str, out: str) -> None:
    """Relay `events` to `out` until killed: decode each value, encode a prediction-sized
    JSON, produce it (the bare client: no commit, no model)."""
    def encode(value: bytes, partition: int, offset: int) -> tuple[bytes, bytes]:
        event = json.loads(value)
        return (json.dumps({"id": event["id"], "prediction": True, "model": "relay",
                            "source": {"partition": partition, "offset": offset}}).encode(),
                event["id"].encode())

    if client == "confluent":
        import confluent_kafka as ck

        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{out}-g",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False})
        producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                                "enable.idempotence": True})
        consumer.subscribe([events])
        while True:
            for m in consumer.consume(500, 0.2):
                if m.error() is None:
                    value, key = encode(m.value(), m.partition(), m.offset())
                    producer.produce(out, value, key)
            producer.poll(0)
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(events, bootstrap_servers=bootstrap, group_id=f"{out}-g",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, enable_idempotence=True)
    while True:
        for records in consumer.poll(timeout_ms=200, max_records=500).values():
            for r in records:
                value, key = encode(r.value, r.partition, r.offset)
                producer.send(out, value=value, key=key)


def start(kind: str, events: str, out: str, model_topic: str, workdir: str, log: Path,
          baseline: Path | None = None):
    """The process measured as `kind` (one of KINDS, or BASELINE: the predictor of the
    checkout `baseline`) reading `events`, writing `out`."""
    what, client = kind.split(" ")
    if what == "relay":
        with open(log, "ab") as fh:
            return subprocess.Popen([sys.executable, __file__, "--relay", client, bk.BOOTSTRAP,
                                     events, out], stdout=fh, stderr=subprocess.STDOUT)
    return bk.role("predict", events, f"{events}-nolabels", out, f"{out}-g", workdir, log,
                   "--model-topic", model_topic, client=client,
                   root=baseline if what == "baseline" else bk.ROOT)


def cpu_us_per_event(kind: str, values: list[bytes], model_topic: str, logs: Path,
                     tag: str, baseline: Path | None = None) -> float:
    """CPU microseconds per event of `kind` over len(values) - WARM events (see the module)."""
    events, out = bk.make_topics(f"bench-cl-{uuid.uuid4().hex[:8]}")  # out: created first,
    # or the reader's metadata would not see it before its refresh (5 minutes)
    producer = KafkaProducer(bootstrap_servers=bk.BOOTSTRAP, linger_ms=20)
    for i, value in enumerate(values[:WARM]):
        producer.send(events, value=value, partition=i % bk.PARTITIONS)
    producer.flush()
    log = logs / f"{tag}-{kind.replace(' ', '-')}.log"
    with tempfile.TemporaryDirectory() as workdir:
        proc = start(kind, events, out, model_topic, workdir, log, baseline)
        try:
            bk.read_predictions(out, WARM, lambda v, now: None, {proc: log})
            before = bk.cpu_seconds([proc])
            for i, value in enumerate(values[WARM:]):
                producer.send(events, value=value, partition=i % bk.PARTITIONS)
            producer.flush()
            bk.read_predictions(out, len(values), lambda v, now: None, {proc: log})
            return (bk.cpu_seconds([proc]) - before) / (len(values) - WARM) * 1e6
        finally:
            bk.stop(proc)
            producer.close()


def publish_model(rows, workdir: str, log: Path) -> str:
    """A model learned by a learner (kafka-python) on WARM events; its model topic."""
    events, labels = bk.make_topics(f"bench-model-{uuid.uuid4().hex[:8]}")
    bk.send_all(KafkaProducer(bootstrap_servers=bk.BOOTSTRAP, linger_ms=20),
                bk.records(rows[:WARM], bk.DELAY), events, labels)
    proc = bk.role("learn", events, labels, f"{events}-unused", f"{events}-learn", workdir, log)
    try:
        bk.wait_report(workdir, lambda r: r["learned"] >= WARM, proc, log)
    finally:
        bk.stop(proc)  # a final publish at the stop
    return f"{events}.model"


def run(args, logs: Path) -> int:
    """The measurements of the module, `args.repeats` times interleaved; prints the figures."""
    rows = bk.elec2(str(bk.ELEC2))
    n = WARM + args.events
    values = [json.dumps({"id": f"e{i}", "x": rows[i % len(rows)][0]}).encode() for i in range(n)]
    kinds = KINDS + ((BASELINE,) if args.baseline_root else ())
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory() as workdir:
            model_topic = publish_model(rows, workdir, logs / f"clients{i}-learner.log")
        for kind in kinds:
            cpu[kind].append(cpu_us_per_event(kind, values, model_topic, logs, f"clients{i}",
                                              args.baseline_root))
        print(f"run {i + 1}: CPU us per event: " + ", ".join(f"{k} {v[-1]:.1f}"
                                                           for k, v in cpu.items()), flush=True)

    def ratio(a: str, b: str) -> str:  # the speed of `a` over `b`: their CPU per event, inverted
        return bk.spread([cb / ca for ca, cb in zip(cpu[a], cpu[b])])

    print(f"{args.events:,} events after {WARM:,} of warm-up, {args.repeats} runs, "
          "CPU us per event, min / median / max:")
    for kind in kinds:
        print(f"  {kind}: {bk.spread(cpu[kind], '{:.1f}')}")
    if args.baseline_root:
        print(f"  predictor confluent vs the predictor of {args.baseline} on kafka-python: "
              f"{ratio('predictor confluent', BASELINE)}x (target >= 4)")
    print(f"  predictor confluent vs predictor kafka-python: "
          f"{ratio('predictor confluent', 'predictor kafka-python')}x (target >= 4)")
    print(f"  predictor confluent vs bare confluent relay: "
          f"{ratio('predictor confluent', 'relay confluent')}x (target >= 0.3)")
    print(f"  predictor kafka-python vs bare kafka-python relay: "
          f"{ratio('predictor kafka-python', 'relay kafka-python')}x (target >= 0.7)")
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--relay"]:
    relay(*sys.argv[2:6])
