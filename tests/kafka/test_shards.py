"""Sharded learners (`serve --role learn --shards 2`, connectors/shards/) on a real broker: the
model the predictors get is the one an independent replay of iterative parameter mixing
computes from the shards' records (each shard's labels in event-time order, a mix every
ceil(K/N) of each shard's, the tail mixed once the shards are read to their ends), with a shard's
active learner SIGKILLed mid-stream and its standby taking over, or not; topics that are not
co-partitioned are refused with one line."""

from __future__ import annotations

import json
import math
import pickle
import signal
import time

import pytest

from river_pa.connectors.replay import elec2, records, send_all
from river_pa.mixing import mix
from river_pa.registry import make_model
from tests.kafka.test_learner_failover import newest_snapshot

N_EVENTS = 2_000
DELAY = 50
MIX_EVERY = 300  # 150 labels of each shard per round
SHARDS = ("--shards", "2", "--mix-every", str(MIX_EVERY), "--mix-seconds", "1",
          "--max-poll-records", "40", "--checkpoint-every", "100")


def shard_learner(kafka, events, labels, name, group, *extra):
    return kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn", *SHARDS,
                              *extra, name=name, group=group)


def replay(kafka, events, rows, mix_every: int = MIX_EVERY) -> object:
    """The final mix of an independent replay: shard s learns the rows whose events are in
    partition s, in event order (their labels' order), ceil(K/N) a round, until all are
    learned."""
    shards = [[], []]
    for record in kafka.read_all(events):
        shards[record.partition].append(rows[int(record.key.decode()[1:])])
    base, per_round, at = make_model("PAClassifier", {}), math.ceil(mix_every / 2), [0, 0]
    models = [base.clone(), base.clone()]
    while True:
        weights = []
        for s, model in enumerate(models):
            for x, y in shards[s][at[s]:at[s] + per_round]:
                model.learn_one(x, y)
            weights.append(min(per_round, len(shards[s]) - at[s]))
            at[s] += weights[-1]
        if not sum(weights):
            return models[0]
        mixed = mix(models, weights)
        models = [pickle.loads(pickle.dumps(mixed)) for _ in models]


def published_when(kafka, events, eo: bool, learned: int, procs, timeout_s=240,
                   model_topic: str | None = None) -> dict:
    """The newest model snapshot once it holds `learned` labels (the shards' last mix)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for proc in procs:
            assert proc.poll() is None, kafka.exited(proc)
        try:
            state = newest_snapshot(kafka, model_topic or f"{events}.model", "model", eo)
        except AssertionError:  # none published yet
            state = None
        if state is not None and state["learned"] == learned:
            return state
        assert time.monotonic() < deadline, f"the mix never held {learned} labels: {state and state['learned']}"
        time.sleep(0.5)


def setup(kafka, elec2_path):
    rows = elec2(str(elec2_path), N_EVENTS)
    events, labels = kafka.topics("events", "labels", partitions=2)
    send_all(kafka.producer(), records(rows, DELAY), events, labels)
    return rows, events, labels


def leader_of(kafka, names, shard: int) -> str:
    return next(n for n in names if f"(shard {shard} of 2); restoring" in kafka.log(n))


@pytest.mark.one_mode(False)
def test_two_shards_publish_the_mix_an_independent_replay_computes(kafka, elec2_path,
                                                                    exactly_once):
    rows, events, labels = setup(kafka, elec2_path)
    eo = ("--exactly-once",) if exactly_once else ()
    group = f"{events}-learn"
    procs = {n: shard_learner(kafka, events, labels, n, group, *eo) for n in ("a", "b")}
    state = published_when(kafka, events, exactly_once, N_EVENTS, procs.values())
    assert pickle.dumps(state["model"]) == pickle.dumps(replay(kafka, events, rows))
    for proc in procs.values():
        assert kafka.stop(proc) == 0
    reports = [kafka.last_report(f"{n}.jsonl") for n in procs]  # written at the stop
    assert sorted(r["shard"]["shard"] for r in reports) == [0, 1]
    assert sum(r["learned"] for r in reports) == N_EVENTS


@pytest.mark.one_mode(True)
def test_a_shards_failover_lands_on_the_same_mix(kafka, elec2_path, exactly_once):
    rows, events, labels = setup(kafka, elec2_path)
    eo = ("--exactly-once",) if exactly_once else ()
    group = f"{events}-learn"
    procs = {n: shard_learner(kafka, events, labels, n, group, *eo) for n in ("a", "b")}
    for n in procs:
        kafka.wait_for_log(n, "active learner: holds the lease", procs[n], 120)
    procs["c"] = shard_learner(kafka, events, labels, "c", group, *eo)
    kafka.wait_for_log("c", "standby: the lease", procs["c"], 120)
    victim = leader_of(kafka, ("a", "b"), 0)
    kafka.wait_for_report(f"{victim}.jsonl", lambda r: r["shard"]["round"] >= 3, procs[victim])
    procs[victim].send_signal(signal.SIGKILL)
    procs.pop(victim).wait()
    for path in kafka.tmp_path.iterdir():  # its machine is gone
        if path.name.startswith(f"{victim}.") and not path.name.endswith(".log"):
            path.unlink()
    kafka.wait_for_log("c", "(shard 0 of 2); restoring", procs["c"], 120)
    state = published_when(kafka, events, exactly_once, N_EVENTS, procs.values())
    assert pickle.dumps(state["model"]) == pickle.dumps(replay(kafka, events, rows))
    for proc in procs.values():
        assert kafka.stop(proc) == 0


def test_a_shard_with_no_records_joins_each_round_and_the_mix_is_the_other_shards(
        kafka, elec2_path):
    # every record in partition 0: shard 1 learns nothing, and joins each round shard 0 waits
    # in (--mix-seconds after it is read to its end) with weight 0 (it once never did: it
    # read the mix topic only while waiting itself)
    rows = elec2(str(elec2_path), 600)
    events, labels = kafka.topics("events", "labels", partitions=2)
    producer = kafka.producer()
    for kind, rid, value, ts in records(rows, DELAY):
        producer.send(events if kind == "event" else labels, key=rid.encode(),
                      value=json.dumps(value).encode(), timestamp_ms=ts, partition=0)
    producer.flush()
    procs = {n: shard_learner(kafka, events, labels, n, f"{events}-learn") for n in ("a", "b")}
    state = published_when(kafka, events, False, len(rows), procs.values())
    alone = make_model("PAClassifier", {})
    for x, y in rows:
        alone.learn_one(x, y)
    assert pickle.dumps(state["model"]) == pickle.dumps(replay(kafka, events, rows))
    assert state["model"].weights == alone.weights
    for proc in procs.values():
        assert kafka.stop(proc) == 0


def test_two_sharded_groups_on_one_events_topic_mix_their_own_models(kafka, elec2_path):
    # both use <events>.mix: a new user's second group mixed the first one's contributions
    # (rounds out of step, then a barrier waiting for ever) before the snapshots were named
    # after the group
    rows, events, labels = setup(kafka, elec2_path)
    procs = {n: shard_learner(kafka, events, labels, n, f"{events}-a") for n in ("a0", "a1")}
    procs.update({n: shard_learner(kafka, events, labels, n, f"{events}-b", "--mix-every", "500",
                                   "--model-topic", f"{events}-b.model") for n in ("b0", "b1")})
    a = published_when(kafka, events, False, N_EVENTS, procs.values())
    b = published_when(kafka, events, False, N_EVENTS, procs.values(),
                       model_topic=f"{events}-b.model")
    assert pickle.dumps(a["model"]) == pickle.dumps(replay(kafka, events, rows))
    assert pickle.dumps(b["model"]) == pickle.dumps(replay(kafka, events, rows, 500))
    for proc in procs.values():
        assert kafka.stop(proc) == 0


def test_topics_that_are_not_copartitioned_are_refused(kafka):
    events, = kafka.topics("events", partitions=2)
    labels, = kafka.topics("labels", partitions=3)
    proc = shard_learner(kafka, events, labels, "a", f"{events}-learn")
    assert proc.wait(timeout=120) == 2
    assert (f"shards=2 needs the events and labels topics co-partitioned (the same partition "
            f"count, at least one per shard, and an event's key on its label): {events} has 2, "
            f"{labels} has 3 partitions") in kafka.log("a")
