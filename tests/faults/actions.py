"""What each fault kind does to a running fault run (`tests/faults/runner.py`'s `Run`).

`fire(run, fault)` resolves the fault's target now (the active learner, a group coordinator's
node, ...), acts, and schedules its end on the run (a restart, a SIGCONT, a broker start, the
topic limit restored). It returns one line saying what it did, or why it skipped the fault (a
target already under a fault, a second broker that would leave fewer than
min.insync.replicas): the run's log and the violation messages quote these lines.

"""

from __future__ import annotations

import hashlib
import json
import pickle
import random
import signal

from kafka import KafkaProducer

from river_pa.connectors.config import ServeConfig, lease_group
from river_pa.connectors.models import control
from river_pa.connectors.state import checkpoint
from river_pa.connectors.state.recovery import FORMER
from river_pa.registry import make_model
from tests.faults.daemons import CHALLENGER, EXTRA

__all__ = ["fire", "forged_checkpoint"]


class Forged:
    """Unpickling this runs `open(marker, "a")`: the marker file's existence proves that a
    record's bytes ran code in a daemon."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "a")


def forged_checkpoint(marker: str) -> bytes:
    """A checkpoint in the daemon's format (header with the right versions, no signature)
    whose pickle creates `marker` when loaded."""
    payload = pickle.dumps({"model": Forged(marker), "learned": 0, "events": 0,
                            "published_at_ms": 0, "stats": None, "pending": None,
                            "offsets": {}})
    header = {**checkpoint.metadata(make_model("PAClassifier", {})), "offsets": {},
              "sha256": hashlib.sha256(payload).hexdigest()}
    return json.dumps(header, sort_keys=True).encode() + b"\n" + payload


# ---- daemons ----------------------------------------------------------------------------

def _daemon(run, target: str) -> str | None:
    """The slot a daemon target names now, or None when there is none free."""
    fleet = run.fleet
    if target == "learner:active":
        name = fleet.active_learner()
    elif target == "learner:standby":
        active = fleet.active_learner()
        name = next((n for n in fleet.live("learn") if n != active), None)
    else:
        live = sorted(fleet.live("predict"))
        name = live[int(target.split(":")[1]) % len(live)] if live else None
    return name if name is not None and not fleet.busy(name) else None


def signal_daemon(run, fault) -> str:
    name = _daemon(run, fault.target)
    if name is None:
        return f"skipped: no free {fault.target}"
    if fault.kind == "pause":
        run.fleet.pause(name)
        run.later(fault.seconds, lambda: run.fleet.resume(name), f"SIGCONT {name}")
        return f"SIGSTOP {name}"
    sig = signal.SIGKILL if fault.kind == "kill" else signal.SIGTERM
    run.fleet.signal(name, sig, restart_after=fault.seconds)
    return f"{sig.name} {name}, restarted {fault.seconds} s after it exits"


def members(run, fault) -> str:
    """A predictor joins, or the newest one leaves for good (never the last one)."""
    fleet = run.fleet
    if fault.target == "join":
        name = f"p{sum(s.role == 'predict' for s in fleet.slots.values()) + 1}"
        fleet.start(name, "predict")
        return f"{name} joins"
    live = [n for n in fleet.live("predict") if not fleet.busy(n)]
    if len(fleet.live("predict")) < 2 or not live:
        return "skipped: one predictor left"
    name = max(live, key=lambda n: int(n[1:]))
    fleet.signal(name, signal.SIGTERM, restart_after=None)
    return f"{name} leaves (SIGTERM, not restarted)"


# ---- brokers ----------------------------------------------------------------------------

def broker_node(run, target: str) -> int:
    """The node a broker target names now (looked up in the cluster's metadata)."""
    what = target.split(":")[1]
    cluster, fleet = run.cluster, run.fleet
    if what == "predict-coordinator":
        return cluster.coordinator(fleet.predict_group)
    if what == "learn-coordinator":
        return cluster.coordinator(fleet.learn_group)
    if what == "lease-coordinator":
        return cluster.coordinator(lease_group(ServeConfig(group_id=fleet.learn_group,
                                                           shards=fleet.shards)))
    if what == "learner-txn":
        return cluster.transaction_coordinator(f"{fleet.learn_group}.learner")
    return int(what)


def broker(run, fault) -> str:
    if run.broker_busy():
        return "skipped: another broker is down (min.insync.replicas 2)"
    node = broker_node(run, fault.target)
    run.in_background(lambda: _bounce(run, node, fault.seconds), f"broker {node}")
    return f"node {node} ({fault.target}) stopped for {fault.seconds} s"


def _bounce(run, node: int, seconds: float) -> None:
    run.cluster.stop_node(node)
    run.wait_seconds(seconds)
    run.cluster.start_node(node)


# ---- records in the state and model topics ----------------------------------------------

def _snapshot_topic(run, which: str) -> tuple[str, str]:
    """(topic, snapshot name) of the state or the model topic."""
    events = run.topics[0]
    if which == "state":
        return f"{events}.state", f"{run.fleet.learn_group}.learner"
    return f"{events}.model", "model"


def _producer(run) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=run.cluster.bootstrap, acks="all", linger_ms=5)


def _send(run, topic: str, records: list[tuple[str, bytes | None]]) -> None:
    producer = _producer(run)
    try:
        for key, value in records:
            producer.send(topic, key=key.encode(), value=value)
        producer.flush(timeout=60)
    finally:
        producer.close()


def _manifests(records: list, name: str) -> list:
    """(record, manifest) of each manifest of snapshot `name` among `records`, oldest first
    by (term, version): a record keyed `name/term/version` (its chunks are keyed
    `name/term/version/i`, connectors/state/snapshots.py) holding a JSON object."""
    out = []
    for record in records:
        parts = record.key.decode(errors="replace").split("/") if record.key else []
        if len(parts) != 3 or parts[0] != name or record.value is None:
            continue
        try:
            manifest = json.loads(record.value)
        except ValueError:
            continue
        if isinstance(manifest, dict) and type(manifest.get("term")) is int \
                and type(manifest.get("version")) is int:
            out.append((record, manifest))
    return sorted(out, key=lambda found: (found[1]["term"], found[1]["version"]))


def _read(run, topic: str) -> list:
    return run.kafka.read_all(topic, committed_only=run.exactly_once)


def replay(run, fault) -> str:
    """Re-send an earlier manifest and the chunks it names, with their own keys (read back
    from the topic, also when the writer has tombstoned them since)."""
    topic, name = _snapshot_topic(run, fault.target)
    records = _read(run, topic)
    manifests = _manifests(records, name)
    if len(manifests) < 2:
        return f"skipped: fewer than 2 snapshots in {topic}"
    record, manifest = random.Random(run.schedule.seed).choice(manifests[:-1])
    prefix = record.key.decode()
    chunks = {r.key.decode(): r.value for r in records
              if r.offset < record.offset and r.key and r.key.startswith(f"{prefix}/".encode())
              and r.value is not None}
    if len(chunks) != manifest["chunks"]:
        return f"skipped: the chunks of {prefix} are gone from {topic}"
    _send(run, topic, [*chunks.items(), (prefix, record.value)])
    return f"replayed {prefix} (newest {manifests[-1][0].key.decode()}) into {topic}"


def _next_key(run, topic: str, name: str) -> tuple[str, dict]:
    """The key and stamp of the version after the newest of `name` in `topic`: what the
    writer would write next."""
    manifests = _manifests(_read(run, topic), name)
    term, version = (manifests[-1][1]["term"], manifests[-1][1]["version"]) if manifests \
        else (1, 0)
    return f"{name}/{term}/{version + 1}", {"term": term, "version": version + 1}


def garbage(run, fault) -> str:
    """64 random bytes as the manifest of the next version, or a tombstone over the newest
    manifest (that version is gone: readers fall back to an older one)."""
    which, what = fault.target.split(":")
    topic, name = _snapshot_topic(run, which)
    if what == "tombstone":
        manifests = _manifests(_read(run, topic), name)
        if not manifests:
            return f"skipped: no snapshot {name} in {topic} to tombstone"
        newest = manifests[-1][0].key.decode()
        _send(run, topic, [(newest, None)])
        return f"tombstone over the newest manifest {newest} in {topic}"
    key, _ = _next_key(run, topic, name)
    _send(run, topic, [(key, random.Random(run.schedule.seed).randbytes(64))])
    return f"64 random bytes as the manifest {key} in {topic}"


def forged_pickle(run, fault) -> str:
    """A pickle that runs code, as the next version with a manifest that matches it (its
    size and SHA-256): only the daemons' loaders stand between it and a process."""
    topic, name = _snapshot_topic(run, fault.target)
    key, stamp = _next_key(run, topic, name)
    payload = forged_checkpoint(str(run.marker))
    run.forged.add(hashlib.sha256(payload).hexdigest())  # the checker never loads these
    digest = hashlib.sha256(payload).hexdigest()
    manifest = {**stamp, "chunks": 1, "bytes": len(payload), "sha256": digest,
                "chunk_sha256": [digest]}
    _send(run, topic, [(f"{key}/0", payload), (key, json.dumps(manifest).encode())])
    return f"forged pickle as {key} in {topic}"


# ---- control records ----------------------------------------------------------------------

def promote(run, fault) -> str:
    """`river-pa models promote` of the challenger or of the former served model, or a
    forged record (signed with another key; not JSON when the daemons sign nothing)."""
    topic = f"{run.topics[0]}.control"
    key = _key(run)
    name = CHALLENGER[0] if fault.target != "former" else FORMER
    if fault.target == "forged":
        record = control.encode("promote", name, b"not the key", topic) if key else \
            (b"promote", b"{not json", [])
    else:
        record = control.encode("promote", name, key, topic)
    _control(run, record)
    return f"{fault.target} control record 'promote {name}' into {topic}"


def pin(run, fault) -> str:
    """`river-pa models pin` of the oldest version of the model topic that verifies, the
    served model's or a challenger's own, then `unpin` `seconds` later (the checker compares
    the newest snapshots with the replay)."""
    from types import SimpleNamespace

    from river_pa.connectors.models.commands import _versions

    events = run.topics[0]
    cfg = SimpleNamespace(bootstrap_servers=run.cluster.bootstrap, client_id="faults", kafka={},
                          model_topic=f"{events}.model", checkpoint_key=run.key)
    versions = _versions(cfg, [CHALLENGER[0], FORMER])
    if not versions:
        return "skipped: no version in the model topic yet (pin)"
    oldest = versions[0]
    _control(run, control.encode("pin", oldest["name"], _key(run), f"{events}.control",
                                 version=oldest["version"]))
    run.later(fault.seconds, lambda: _control(run, control.encode(
        "unpin", "", _key(run), f"{events}.control")), "control record 'unpin'")
    return f"control record 'pin {oldest['name']} {oldest['version']}', unpin in " \
           f"{fault.seconds:.1f} s"


def models(run, fault) -> str:
    """`river-pa models add` of `EXTRA` (with `--backfill` or not), then `remove` `seconds`
    later (not for `add-kept`); the checker finds what it learned in its own newest snapshot
    of the model topic, or none left once removed."""
    topic, (name, spec) = f"{run.topics[0]}.control", EXTRA
    backfill = fault.target == "add-backfill"
    _control(run, control.encode("add", name, _key(run), topic, spec=spec, backfill=backfill))
    if fault.target == "add-kept":
        return f"control record 'add {name} {spec}'"
    run.later(fault.seconds, lambda: _control(run, control.encode("remove", name, _key(run),
                                                                  topic)),
              f"control record 'remove {name}'")
    return f"control record 'add {name} {spec}{' --backfill' * backfill}', remove in " \
           f"{fault.seconds:.1f} s"


def _key(run) -> bytes | None:
    return run.key.encode() if run.key else None


def _control(run, record: tuple) -> None:
    producer = _producer(run)
    try:
        producer.send(f"{run.topics[0]}.control", key=record[0], value=record[1],
                      headers=record[2])
        producer.flush(timeout=60)
    finally:
        producer.close()


# ---- topic limits -----------------------------------------------------------------------

# below any prediction's batch, above a transaction marker's (a control batch of about 80
# bytes): at 64 bytes the broker's transaction coordinator failed to write a marker
# (IllegalStateException: RecordTooLargeException while sending txn marker, seed 136) and the
# predictors' transactional ids stayed stuck until the coordinator moved, whatever a client
# did: an operator's limit that Kafka itself cannot live with, not a fault to serve through
LIMIT_BYTES = 100


def limit(run, fault) -> str:
    preds = run.topics[2]
    run.cluster.set_topic_config(preds, "max.message.bytes", str(LIMIT_BYTES))
    run.later(fault.seconds, lambda: run.cluster.set_topic_config(preds, "max.message.bytes", None),
              f"max.message.bytes of {preds} restored")
    return f"max.message.bytes of {preds} lowered to {LIMIT_BYTES} for {fault.seconds} s"


ACTIONS = {"kill": signal_daemon, "term": signal_daemon, "pause": signal_daemon, "broker": broker,
           "members": members, "replay": replay, "garbage": garbage, "pickle": forged_pickle,
           "limit": limit, "promote": promote, "pin": pin, "models": models}


def fire(run, fault) -> str:
    """Carry out `fault` on `run`; one line saying what was done."""
    return ACTIONS[fault.kind](run, fault)
