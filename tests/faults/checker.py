"""The invariants a fault run must hold once its schedule has healed.

`check(run)` first waits, up to `PROGRESS_S` after the heal, for the stream to be processed
(every learner and predictor group's committed offsets at the ends of their topics and a
learner report with every label learned): not getting there is invariant (d), the progress
after heal. It then stops every daemon with SIGTERM and reads the topics:

(a) every event predicted: at least once, exactly once for read_committed readers with
    --exactly-once (an event whose prediction a lowered topic limit refused may be a
    dead letter `output_rejected` instead);
(b) every label whose event exists learned exactly once: `learned` of the state a next
    learner restores from the state topic equals the number of labelled events (every one
    here), nothing left pending (the pending bounds are the defaults: nothing expires);
(c) the final model equals an independent replay of the learner's documented merge (every
    record of both topics in (timestamp, labels first, partition, offset) order, predict at
    the event, learn at the label): byte for byte (pickle) and the exact metric when the whole
    stream was in Kafka before the faults or the learner merged no record late (its state's
    `late_records`: written after a later record had been released), the metric within
    `TOLERANCE` events otherwise;
    the newest model snapshot in the model topic (what a new predictor loads) likewise, and
    the challenger's own newest one (`model@NAME`); the
    learner's challenger (daemons.py's `CHALLENGER`) and both drift watches likewise against
    the same replay (the challenger's learned count always), whichever of the two models
    serves (a `promote` fault swaps them: each model is checked against its own replay);
(d) no daemon froze (the progress above), exited on its own after the heal, exited on its own
    `LOOP` times or more (a restart loop), or exited non-zero on a SIGTERM (but -15, the
    signal itself when it came before the daemon's handler was installed, and 1 with the
    documented line `STOPPED`: a stop that could not write its final checkpoint, a
    coordinator's broker away) or did not exit on the final one;
(e) no record ran code: the forged pickles' marker file does not exist.

With `--shards` (the schedule's `shards`), (b) and (c) are those of tests/faults/shards.py: the
shards' rounds as the mix topic recorded them, replayed.

`message` puts a run's violations together with its seed, its schedule (one line per fault,
and what each resolved to) and the command that reproduces it.

"""

from __future__ import annotations

import json
import pickle
import time
from collections import Counter

from kafka import KafkaConsumer
from river import metrics

from river_pa.connectors.observe.drift import DriftWatch, make_detector
from river_pa.connectors.state import checkpoint, snapshots
from river_pa.registry import make_model

from tests.faults.daemons import CHALLENGER, EXTRA
from tests.faults.shards import mixed_model, published

__all__ = ["check", "message"]

PROGRESS_S = 180  # ten times what a healed run takes on a busy machine
TOLERANCE = 5  # events: the learner merged a record after a later one (late_records > 0)
LOOP = 3


def check(run) -> list[str]:
    """Every violation of the invariants (a)-(e) in `run`, one line each with its figures."""
    found = []
    stuck = wait_progress(run)
    if stuck:
        found.append(f"(d) no progress within {PROGRESS_S} s after the heal: {stuck}")
    found += exits(run, run.fleet.stop_all())
    found += predictions(run)
    found += learned_and_model(run) if run.schedule.shards == 1 else mixed_model(run)
    if run.marker.exists():
        found.append(f"(e) a record ran code: {run.marker} exists")
    return found


def message(run, violations: list[str]) -> str:
    """The violations of a run with its seed, schedule, what happened, and the command that
    reproduces it."""
    schedule, mode = run.schedule, "on" if run.exactly_once else "off"
    return "\n".join([f"seed {schedule.seed}, exactly-once {mode}: {len(violations)} violations",
                      *[f"  invariant {v}" for v in violations],
                      schedule.lines(), "what happened:", *run.result.log,
                      f"daemons' logs and reports: {run.kafka.tmp_path}",
                      f"reproduce: python -m tests.faults.soak --seed {schedule.seed} "
                      f"--exactly-once {mode} --kinds {','.join(schedule.kinds)} "
                      f"--length {len(schedule.faults)} --events {run.stream.n_events} "
                      f"--client {run.result.client} --shards {schedule.shards}"])


# ---- (d) progress after the heal, exits -------------------------------------------------

def behind(run, group: str, topics) -> dict:
    """{topic:partition: records not yet committed by `group`} for `topics`, if any."""
    committed = run.cluster.committed(group)
    out = {}
    for topic in topics:
        for tp, end in run.cluster.end_offsets(topic).items():
            if committed.get(tp, 0) < end:
                out[f"{topic}:{tp.partition}"] = end - committed.get(tp, 0)
    return out


def lag(run) -> str | None:
    """What is not processed yet, or None when everything is."""
    events, labels, _ = run.topics
    try:
        learners = behind(run, run.fleet.learn_group, (events, labels))
        predictors = behind(run, run.fleet.predict_group, (events,))
    except Exception as exc:  # noqa: BLE001 (a coordinator moving: ask again)
        return f"offsets unknown ({exc!r})"
    learned = run.learned()
    if learned >= run.stream.n_events:  # and the model that learned them published (with
        learned = published(run)        # exactly-once: its transaction committed), as (c)
        # checks it; the shards' tail mix, and seed 1013 on confluent-kafka: the transaction
        # of the last snapshot hung in librdkafka (#5456) for its 20 s past the heal, the run
        # was stopped meanwhile and (c) found the snapshot before it
    if learners or predictors or learned < run.stream.n_events:
        return (f"learned {learned} of {run.stream.n_events}; learners' group behind {learners}, "
                f"predictors' group behind {predictors} (owners {owners(run)}); unexpected exits "
                f"{ {n: s.unexpected for n, s in run.fleet.slots.items() if s.unexpected} }")
    return None


def owners(run) -> dict:
    """{events partition: client id} of the predictors' group as its coordinator says."""
    admin = run.cluster.admin()
    try:
        info = admin.describe_groups([run.fleet.predict_group])[run.fleet.predict_group]
    except Exception as exc:  # noqa: BLE001 (only a description for the message)
        return {"unknown": repr(exc)}
    finally:
        admin.close()
    out = {"state": info["group_state"]}
    for member in info["members"]:
        for topic in (member.get("member_assignment") or {}).get("assigned_partitions", ()):
            out.update({p: member["client_id"] for p in topic["partitions"]})
    return out


def wait_progress(run) -> str | None:
    deadline = run.healed_at + PROGRESS_S
    run.unexpected_at_heal = {n: s.unexpected for n, s in run.fleet.slots.items()}
    while (stuck := lag(run)) and time.monotonic() < deadline:
        run.fleet.tick()
        time.sleep(1)
    run.note("processed everything" if not stuck else f"still behind: {stuck}")
    return stuck


STOPPED = "stopped without a final checkpoint"  # exit 1: served again at the next start


def _stopped(run, name: str, status) -> bool:
    """Whether `status` is a right answer of daemon `name` to a SIGTERM (see (d))."""
    return status in (0, -15) or (status == 1 and STOPPED in run.kafka.log(name))


def exits(run, statuses: dict) -> list[str]:
    found = []
    for name, slot in run.fleet.slots.items():
        if slot.unexpected > run.unexpected_at_heal.get(name, 0):
            found.append(f"(d) {name} exited on its own after the heal: exits {slot.exits}")
        if slot.unexpected >= LOOP:
            found.append(f"(d) {name} exited on its own {slot.unexpected} times (a restart "
                         f"loop): exits {slot.exits}")
        for status, cause in slot.exits:
            if cause == "SIGTERM" and not _stopped(run, name, status):
                found.append(f"(d) {name} exited {status} after a SIGTERM: exits {slot.exits}")
                break
    # -15 here too: a daemon restarted just before the final SIGTERM, still importing (seed
    # 155: la restarted 5 s before it, no line logged yet); any other status is a violation
    bad = {n: s for n, s in statuses.items() if not _stopped(run, n, s)}
    if bad:
        found.append(f"(d) exit statuses after the final SIGTERM (None: still running after "
                     f"60 s) {bad}")
    return found


# ---- (a) predictions ----------------------------------------------------------------------

def read_if_any(run, topic: str, committed_only: bool = False) -> list:
    """The records of `topic`, none if it was never created."""
    return run.kafka.read_all(topic, committed_only) if run.cluster.end_offsets(topic) else []


def _positions(run, topic: str, ids: set, most: int = 5) -> dict:
    """{id: "partition:offset"} of the first `most` records of `ids` in `topic`."""
    first = set(sorted(ids)[:most])
    return {r.key.decode(): f"{r.partition}:{r.offset}" for r in run.kafka.read_all(topic)
            if r.key and r.key.decode() in first}


def predictions(run) -> list[str]:
    events, _, preds = run.topics
    counts = Counter(json.loads(r.value)["id"] for r in run.kafka.read_all(preds, run.exactly_once))
    reasons = {}  # event id -> dead-letter reasons
    for r in read_if_any(run, f"{events}-dlq"):
        reasons.setdefault(r.key.decode(), set()).add(dict(r.headers or ()).get("reason", b"").decode())
    rejected = {i for i, why in reasons.items() if "output_rejected" in why}
    ids = run.stream.ids()
    found = []
    missing = ids - counts.keys() - rejected
    if missing:
        why = Counter(r for i in missing for r in reasons.get(i, {"not dead-lettered"}))
        found.append(f"(a) {len(missing)} of {len(ids)} events never predicted (nor refused "
                     f"by the topic limit), e.g. {sorted(missing)[:5]}; their dead letters: "
                     f"{dict(why)}; where they are: {_positions(run, events, missing)}")
    if counts.keys() - ids:
        found.append(f"(a) predictions for ids never sent: {sorted(counts.keys() - ids)[:5]}")
    if run.exactly_once:  # one output per event: its prediction or its dead letter
        outputs = counts + Counter(
            r.key.decode() for r in read_if_any(run, f"{events}-dlq", committed_only=True)
            if dict(r.headers or ()).get("source_topic") == events.encode())
        doubles = {i: c for i, c in outputs.items() if c > 1}
        if doubles:
            found.append(f"(a) {len(doubles)} events predicted or dead-lettered more than once "
                         f"for a read_committed reader, e.g. {dict(list(doubles.items())[:5])}")
    run.note(f"predictions: {len(counts)} ids, {sum(counts.values())} records, "
             f"{len(rejected)} refused by the topic limit")
    return found


# ---- (b), (c) the learner's state and model -------------------------------------------------

class _Replayed:
    """One model of the replay: the model, its metric and its drift watch (the daemon's)."""

    def __init__(self, params: dict):
        self.model, self.metric = make_model("PAClassifier", params), metrics.Accuracy()
        self.watch = DriftWatch(make_detector("ADWIN", {}))

    def learn(self, x: dict, y, y_pred) -> None:
        if y_pred is not None and y_pred != {}:
            self.metric.update(y, y_pred)
            self.watch.update(y, y_pred)
        self.model.learn_one(x, y)


def reference(run) -> tuple[_Replayed, _Replayed, int]:
    """(the served model, the challenger, learned) of the documented merge replayed over both
    topics."""
    events, labels, _ = run.topics
    records = run.kafka.read_all(events) + run.kafka.read_all(labels)
    records.sort(key=lambda r: (r.timestamp, r.topic == events, r.partition, r.offset))
    models, learned = (_Replayed({}), _Replayed(CHALLENGER[1])), 0
    pending, early = {}, {}
    for record in records:
        value = json.loads(record.value)
        rid = value["id"]
        if record.topic == events:
            y_preds = [m.model.predict_one(value["x"]) for m in models]
            if rid not in early:
                pending[rid] = (value["x"], y_preds)
                continue
            x, y = value["x"], early.pop(rid)
        elif rid in pending:
            (x, y_preds), y = pending.pop(rid), value["y"]
        else:
            early[rid] = value["y"]
            continue
        for replayed, y_pred in zip(models, y_preds):
            replayed.learn(x, y, y_pred)
        learned += 1
    return *models, learned


def restored(run, topic: str, name: str) -> dict:
    """The newest snapshot `name` in `topic` that loads as a daemon loads it (with the run's
    key; the others skipped, as a daemon skips them), read with the isolation of the run."""
    reader = KafkaConsumer(bootstrap_servers=run.cluster.bootstrap, group_id=None,
                           enable_auto_commit=False, max_partition_fetch_bytes=4 * 2**20,
                           isolation_level="read_committed" if run.exactly_once
                           else "read_uncommitted")
    skipped = []
    try:
        found = snapshots.Reader(reader, topic, name, on_invalid=skipped.append)
        found.read_to_end(120)
        meta = checkpoint.metadata(make_model("PAClassifier", {}))
        for manifest, payload in found.candidates():
            if manifest["sha256"] in run.forged:  # loading it here would run it
                found.reject(manifest, "is the forged pickle")
                continue
            path = run.kafka.tmp_path / f"check-{name}.ckpt"
            path.write_bytes(payload)
            try:
                return checkpoint.load(path, meta, run.key.encode() if run.key else None)
            except checkpoint.CheckpointError as exc:
                found.reject(manifest, str(exc))
    finally:
        reader.close()
    raise snapshots.SnapshotError(f"{topic}: no snapshot {name} loads ({'; '.join(skipped)})")


def learned_and_model(run) -> list[str]:
    events = run.topics[0]
    served, challenger, labelled = reference(run)
    found = []
    try:
        state = restored(run, f"{events}.state", f"{run.fleet.learn_group}.learner")
    except Exception as exc:  # noqa: BLE001 (what a next learner would meet)
        return [f"(c) the state topic's newest state cannot be restored: {exc}"]
    if state["model"].C == CHALLENGER[1]["C"]:  # promoted by a control record (`promote`)
        served, challenger = challenger, served
    model, accuracy = served.model, served.metric.get()
    counts, [got] = state["stats"].counts, state["stats"].metric.get()
    exact = not run.schedule.live or counts["late_records"] == 0
    run.note(f"state: serving {type(model).__name__}(C={model.C}), learned {counts['learned']}, "
             f"accuracy {got}, late records {counts['late_records']}; replay: learned "
             f"{labelled}, accuracy {accuracy}")
    if counts["learned"] != labelled or len(state["pending"]) or len(state["early"]):
        found.append(f"(b) learned {counts['learned']} of {labelled} labelled events, "
                     f"pending {len(state['pending'])}, early labels {len(state['early'])}")
    if exact and pickle.dumps(state["model"]) != pickle.dumps(model):
        found.append("(c) the final model's pickle differs from the replay's")
    if (got != accuracy) if exact else abs(got - accuracy) * labelled > TOLERANCE:
        found.append(f"(c) accuracy {got} where the replay gives {accuracy}")
    if exact and state["stats"].drift.snapshot() != served.watch.snapshot():
        found.append(f"(c) drift {state['stats'].drift.snapshot()} where the replay gives "
                     f"{served.watch.snapshot()}")
    others = {n: c for n, c in state["challengers"].items()
              if c["model"].C == challenger.model.C}
    found += challenged(*others.values() if len(others) == 1 else [None], challenger, labelled,
                        exact)
    found += published_model(run, model, labelled, exact)
    for name in others if len(others) == 1 else ():  # its own snapshots (models/publishing.py)
        found += published_model(run, challenger.model, labelled, exact, f"model@{name}")
    return found + added_model(run, state)


def added_model(run, state: dict) -> list[str]:
    """The challenger the `models` fault adds (daemons.py's `EXTRA`): its own newest snapshot
    holds what the state says it learned, or, removed, none of its records is left in the
    model topic (its snapshots tombstoned)."""
    name, topic = EXTRA[0], f"{run.topics[0]}.model"
    if name in state["control"]["backfilling"]:
        return []  # not joined: nothing published yet
    saved = state["challengers"].get(name)
    if saved is None:
        left = live_keys(run, topic, f"model@{name}/".encode())
        return [f"(c) {len(left)} records of the removed challenger {name} are not tombstoned "
                f"in {topic}, e.g. {left[0]!r}"] if left else []
    learned = saved["stats"].counts["learned"]
    if learned == 0:
        return []  # none yet: it learned nothing (models/publishing.py)
    try:
        snapshot = restored(run, topic, f"model@{name}")
    except Exception as exc:  # noqa: BLE001
        return [f"(c) challenger {name} has no snapshot of its own that loads: {exc}"]
    return [] if snapshot["learned"] == learned else [
        f"(c) the newest snapshot model@{name} learned {snapshot['learned']} of {learned}"]


def live_keys(run, topic: str, prefix: bytes) -> list[bytes]:
    """The keys starting with `prefix` whose newest record in `topic` is not a tombstone (what
    compaction keeps), read with the isolation of the run."""
    reader = KafkaConsumer(bootstrap_servers=run.cluster.bootstrap, group_id=None,
                           enable_auto_commit=False, consumer_timeout_ms=10_000,
                           isolation_level="read_committed" if run.exactly_once
                           else "read_uncommitted", auto_offset_reset="earliest")
    try:
        from kafka import TopicPartition

        tp = TopicPartition(topic, 0)
        reader.assign([tp])
        end = reader.end_offsets([tp])[tp]
        newest = {}
        while reader.position(tp) < end:
            for record in reader.poll(timeout_ms=1000).get(tp, ()):
                if record.key is not None and record.key.startswith(prefix):
                    newest[record.key] = record.value is not None
        return sorted(key for key, live in newest.items() if live)
    finally:
        reader.close()


def challenged(state, replayed: _Replayed, labelled: int, exact: bool) -> list[str]:
    """The challenger in the restored state (the model not serving: `CHALLENGER`, or the
    former served model after a promotion) against its replay."""
    if state is None:
        return [f"(c) the state has not one challenger of C={replayed.model.C}"]
    stats = state["stats"]
    if stats.counts["learned"] != labelled or state["errors"]:
        return [f"(b) the challenger learned {stats.counts['learned']} of {labelled} labelled "
                f"events ({state['errors']} errors)"]
    if not exact:
        return []
    if pickle.dumps(state["model"]) != pickle.dumps(replayed.model):
        return ["(c) the challenger's pickle differs from the replay's"]
    got, want = (stats.metric.get()[0], stats.drift.snapshot()), (replayed.metric.get(),
                                                                  replayed.watch.snapshot())
    return [] if got == want else [f"(c) the challenger's accuracy and drift {got} where the "
                                   f"replay gives {want}"]


def published_model(run, model, labelled: int, exact: bool, name: str = "model") -> list[str]:
    """The newest snapshot `name` in the model topic: the served model's (what a new
    predictor loads), or a challenger's own (`model@NAME`)."""
    try:
        snapshot = restored(run, f"{run.topics[0]}.model", name)
    except Exception as exc:  # noqa: BLE001
        return [f"(c) the model topic's newest snapshot {name} cannot be loaded: {exc}"]
    if snapshot["learned"] != labelled:
        return [f"(c) the newest snapshot {name} learned {snapshot['learned']} of {labelled}"]
    if exact and pickle.dumps(snapshot["model"]) != pickle.dumps(model):
        return [f"(c) the newest snapshot {name}'s pickle differs from the replay's"]
    return []
