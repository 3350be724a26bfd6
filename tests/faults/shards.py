"""Invariants (b) and (c) of a sharded run (`serve --role learn --shards N`, connectors/shards/).

The mix topic holds every shard's contribution to every round (tombstoned ones too: nothing is
compacted within a run, its segments roll every 10 minutes), so the check replays the rounds as
they were recorded, independently of the daemon's code: shard s's labelled events are those of
the partitions p with p mod N = s, joined in the learner's documented merge order ((timestamp,
labels first, partition, offset) over its partitions); in round r shard s learns the next
w(s, r) of them, w its recorded weight, and the shards continue from `river_pa.mix` of their
models weighted by w. Violations:

(b) a round recorded with different weights by two terms of one shard (the shards would mix
    different models), a shard's weights that do not add up to its labelled events (a label
    learned twice or never), a round whose weight exceeds ceil(K/N);
(c) the model topic's newest snapshot (what a new predictor loads; shard 0 publishes each mix)
    not the replay's last mix: its `learned` the labelled events of the stream, and byte for
    byte (pickle) when the merge was exact (the whole stream in Kafka before the faults, or no
    shard merged a record late).

"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import re
from collections import defaultdict

from kafka import KafkaConsumer

from river_pa.connectors.state import checkpoint
from river_pa.mixing import mix
from river_pa.registry import make_model

__all__ = ["mixed_model", "published"]



def sequences(run, shards: int) -> list[list[tuple]]:
    """Each shard's labelled events (x, y) in the order its learner learns them."""
    events, labels, _ = run.topics
    records = run.kafka.read_all(events) + run.kafka.read_all(labels)
    records.sort(key=lambda r: (r.timestamp, r.topic == events, r.partition, r.offset))
    out = [[] for _ in range(shards)]
    pending, early = [{} for _ in range(shards)], [{} for _ in range(shards)]
    for record in records:
        s, value = record.partition % shards, json.loads(record.value)
        rid = value["id"]
        if record.topic == events:
            if rid in early[s]:
                out[s].append((value["x"], early[s].pop(rid)))
            else:
                pending[s][rid] = value["x"]
        elif rid in pending[s]:
            out[s].append((pending[s].pop(rid), value["y"]))
        else:
            early[s][rid] = value["y"]
    return out


def recorded(run) -> dict:
    """{(shard, round): {term: weight}} of the contributions in the mix topic that load."""
    consumer = KafkaConsumer(f"{run.topics[0]}.mix", bootstrap_servers=run.cluster.bootstrap,
                             group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000,
                             max_partition_fetch_bytes=4 * 2**20,
                             isolation_level="read_committed" if run.exactly_once
                             else "read_uncommitted")
    chunks, manifests = defaultdict(dict), {}
    named = re.compile(re.escape(f"{run.fleet.learn_group}.shard".encode())
                       + rb"(\d+)/(\d+)/(\d+)(?:/(\d+))?")
    try:
        for record in consumer:
            match = named.fullmatch(record.key or b"")
            if match is None or record.value is None:
                continue
            s, t, r, i = match.groups()
            at = (int(s), int(t), int(r))
            if i is None:
                manifests[at] = json.loads(record.value)
            else:
                chunks[at][int(i)] = record.value
    finally:
        consumer.close()
    meta = checkpoint.metadata(make_model("PAClassifier", {}))
    key = run.key.encode() if run.key else None
    out = defaultdict(dict)
    for (s, t, r), manifest in manifests.items():
        payload = b"".join(chunks[s, t, r].get(i, b"") for i in range(manifest["chunks"]))
        if hashlib.sha256(payload).hexdigest() != manifest["sha256"]:
            continue
        try:
            _, state = checkpoint.loads(payload, meta, key, "a contribution",
                                        {"term": t, "version": r})
        except checkpoint.CheckpointError:  # as the shards skip it
            continue
        out[s, r][t] = state["weight"]
    return out


def replay(seqs: list[list[tuple]], weights: dict, rounds: int):
    """The last mix of `rounds` rounds of `weights` ({(shard, round): weight}) over `seqs`."""
    base = make_model("PAClassifier", {})
    models, at, last = [base.clone() for _ in seqs], [0] * len(seqs), None
    for r in range(1, rounds + 1):
        w = [weights[s, r] for s in range(len(seqs))]
        for s, model in enumerate(models):
            for x, y in seqs[s][at[s]:at[s] + w[s]]:
                model.learn_one(x, y)
            at[s] += w[s]
        if sum(w):
            last = mix(models, w)
            models = [pickle.loads(pickle.dumps(last)) for _ in models]
    return last


def mixed_model(run) -> list[str]:
    """The violations of (b) and (c) of a sharded run (see the module docstring)."""
    from tests.faults.checker import restored
    from tests.faults.daemons import MIX_EVERY

    shards = run.schedule.shards
    seqs = sequences(run, shards)
    labelled = sum(map(len, seqs))
    per_round = math.ceil(MIX_EVERY / shards)
    try:
        snapshot = restored(run, f"{run.topics[0]}.model", "model")
    except Exception:  # noqa: BLE001 (none that loads: said below)
        snapshot = None
    found, weights = [], {}
    for (s, r), by_term in sorted(recorded(run).items()):
        if len(set(by_term.values())) > 1:
            found.append(f"(b) round {r} of shard {s} recorded with weights {by_term} by term")
        weights[s, r] = max(by_term.items())[1]  # the newest term's, as the shards read it
        if weights[s, r] > per_round:
            found.append(f"(b) round {r} of shard {s} weighs {weights[s, r]} > {per_round}")
    rounds = max((r for (s, r) in weights if all((t, r) in weights for t in range(shards))),
                 default=0)
    for s in range(shards):
        got = sum(weights.get((s, r), 0) for r in range(1, rounds + 1))
        if got != len(seqs[s]):
            found.append(f"(b) shard {s} mixed {got} labels in {rounds} rounds of its "
                         f"{len(seqs[s])}")
    run.note(f"shards: {rounds} rounds mixed, weights {[weights.get((s, r)) for r in range(1, rounds + 1) for s in range(shards)]}")
    if snapshot is None:
        return found + ["(c) the model topic has no snapshot of a mix that loads"]
    if snapshot["learned"] != labelled:
        return found + [f"(c) the newest mix published learned {snapshot['learned']} of "
                        f"{labelled}"]
    late = any(_late(run, n) for n in run.fleet.slots if run.fleet.slots[n].role == "learn")
    model = replay(seqs, weights, rounds)
    if (not run.schedule.live or not late) and pickle.dumps(snapshot["model"]) != pickle.dumps(model):
        found.append("(c) the newest mix published differs from the replay's (pickle)")
    return found


def published(run) -> int:
    """The labels the model topic's newest snapshot of the served model (with shards, the
    newest mix) holds (0: none loads yet)."""
    from tests.faults.checker import restored

    try:
        return restored(run, f"{run.topics[0]}.model", "model")["learned"]
    except Exception:  # noqa: BLE001 (none yet)
        return 0


def _late(run, name: str) -> int:
    try:
        return run.kafka.last_report(f"{name}.jsonl")["late_records"]
    except (OSError, ValueError, IndexError, KeyError):  # a standby that never reported
        return 0
