"""1 -> 2 -> 3 predictors and back, while events flow: one learner, labels late on their own
topic. Members join one by one, one leaves gracefully, one is SIGKILLed, one comes back; every
step waits for the group's state (the coordinator's description), never for a time window."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter

import pytest
from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_roles import covered, predictor, wait_covered

N_EVENTS = 3_000
DELAY = 100
GHOSTS = 5  # labels whose event never exists: the only orphans allowed
RATE = 300  # events/s offered while the group changes
STEPS = 7  # chunks of the stream: one flows during each membership change, one after the last


class Flow(threading.Thread):
    """Sends the stream chunk by chunk at `RATE` events/s; `release()` lets the next chunk go
    (so each chunk flows while the step that released it takes place)."""

    def __init__(self, kafka, chunks: list, events: str, labels: str):
        super().__init__(daemon=True)
        self.kafka, self.chunks, self.topics = kafka, chunks, (events, labels)
        self.gate = threading.Semaphore(0)
        self.sent = 0  # chunks fully sent
        self.error: BaseException | None = None

    def release(self) -> None:
        self.gate.release()

    def run(self) -> None:
        producer = self.kafka.producer()
        try:
            for chunk in self.chunks:
                self.gate.acquire()
                send_all(producer, chunk, *self.topics, rate=RATE)
                self.sent += 1
        except BaseException as exc:  # noqa: BLE001 (re-raised by the test's thread in finish)
            self.error = exc
        finally:
            producer.close()

    def finish(self, timeout_s: float = 120) -> None:
        self.join(timeout_s)
        assert self.error is None, self.error
        assert self.sent == len(self.chunks), f"{self.sent} of {len(self.chunks)} chunks sent"


def assignment(kafka, group: str) -> dict | None:
    """{client id: set of events partitions} of a Stable group, else None."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        info = admin.describe_groups([group])[group]
    except KafkaError:  # the coordinator is loading or moving: ask again
        return None
    finally:
        admin.close()
    if info["group_state"] != "Stable":
        return None
    out = {}
    for member in info["members"]:
        parts = (member["member_assignment"] or {}).get("assigned_partitions", [])
        out[member["client_id"]] = {p for topic in parts for p in topic["partitions"]}
    return out


def wait_members(kafka, group: str, names: set, procs: list, timeout_s: float = 120) -> dict:
    """Wait until `group` is Stable with exactly the members `names`, each owning partitions
    (together all 6); every process in `procs` must stay alive meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        owned = assignment(kafka, group)
        if owned is not None and owned.keys() == names and all(owned.values()) \
                and set().union(*owned.values()) == set(range(6)):
            return owned
        for proc in procs:
            assert proc.poll() is None, kafka.exited(proc)
        assert time.monotonic() < deadline, f"group {group} never had {sorted(names)}: {owned}"
        time.sleep(0.2)


def stream_with_ghosts(rows) -> list:
    """The records of `rows` with labels DELAY events late, and GHOSTS labels for ids no event
    has, sent early (their event time is that of the 10th event, so they expire as orphans
    once event time passes the pending TTL)."""
    stream = list(records(rows, DELAY))
    ts = stream[10][3]
    ghosts = [("label", f"ghost{k}", {"id": f"ghost{k}", "y": True}, ts) for k in range(GHOSTS)]
    return stream[:10] + ghosts + stream[10:]


def chunks_of(stream: list, n: int) -> list[list]:
    """`stream` cut into `n` runs with about the same number of events."""
    events = [i for i, r in enumerate(stream) if r[0] == "event"]
    cuts = [0] + [events[len(events) * k // n] for k in range(1, n)] + [len(stream)]
    return [stream[a:b] for a, b in zip(cuts, cuts[1:])]


@pytest.mark.one_mode(True)
def test_predictors_join_leave_are_killed_and_come_back_while_events_flow(kafka, elec2_path,
                                                                          exactly_once):
    rows = elec2(str(elec2_path), N_EVENTS)
    stream = stream_with_ghosts(rows)
    chunks = chunks_of(stream, STEPS)
    last_ids = {r[1] for r in chunks[-1] if r[0] == "event"}
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=6)
    group = f"{events}-predict"
    # a session of 6 s, not the fixture's 2: a member stalled on a busy machine must not be
    # evicted (a rebalance nobody asked for) while the last chunk is checked against owners
    flags = ("--session-timeout-ms", "6000") + (("--exactly-once",) if exactly_once else ())
    slot = ("--transactional-id", f"{events}-slot3")  # p3's comeback fences the killed p3
    flow = Flow(kafka, chunks, events, labels)
    flow.start()
    # a pending TTL of 300 s of event time (labels come 100 s late): only the ghosts expire
    learner = kafka.serve_stream(events, labels, f"{events}-unused", "--role", "learn",
                                 "--publish-every", "300", "--publish-seconds", "0.5",
                                 "--checkpoint-seconds", "0.5", "--pending-ttl-ms", "300000",
                                 *flags, name="learner")
    p1 = predictor(kafka, events, preds, "p1", *flags)
    flow.release()  # 1: one predictor, from the learner's first snapshot on
    wait_members(kafka, group, {"p1"}, [learner, p1])
    p2 = predictor(kafka, events, preds, "p2", *flags)
    flow.release()  # 2
    wait_members(kafka, group, {"p1", "p2"}, [learner, p1, p2])
    p3 = predictor(kafka, events, preds, "p3", *flags, *slot)
    flow.release()  # 3
    wait_members(kafka, group, {"p1", "p2", "p3"}, [learner, p1, p2, p3])
    flow.release()  # 2, gracefully: its last predictions and offsets committed, then it leaves
    assert kafka.stop(p2) == 0
    wait_members(kafka, group, {"p1", "p3"}, [learner, p1, p3])
    flow.release()  # 1: p3 dies without a word; the coordinator evicts it after the session
    kafka.stop(p3, signal.SIGKILL)
    wait_members(kafka, group, {"p1"}, [learner, p1])
    p3b = predictor(kafka, events, preds, "p3b", *flags, *slot)  # 2 again: a new node
    flow.release()
    owned = wait_members(kafka, group, {"p1", "p3b"}, [learner, p1, p3b])
    flow.release()  # the last chunk flows into a stable group of two
    flow.finish()

    got = wait_covered(kafka, preds, {f"e{i}" for i in range(N_EVENTS)}, [learner, p1, p3b],
                       exactly_once)
    report = kafka.wait_for_report(
        "learner.jsonl", lambda r: r["learned"] == N_EVENTS and r["orphan_labels"] == GHOSTS,
        learner)
    for proc in (learner, p1, p3b):
        assert kafka.stop(proc) == 0
    # every event predicted, none lost; exactly one for read-committed readers with EOS
    got = covered(kafka, preds, exactly_once)  # everything, the last commits included
    assert got.keys() == {f"e{i}" for i in range(N_EVENTS)}
    counts = Counter(len(vs) for vs in got.values())
    if exactly_once:
        assert counts == {1: N_EVENTS}
    # the last chunk went to the stable group: each partition to the member that owns it
    served = {(v["source"]["partition"], v["daemon"]) for i in last_ids for v in got[i]}
    assert served == {(p, name) for name, parts in owned.items() for p in parts}
    assert {v["daemon"] for vs in got.values() for v in vs} >= {"p1", "p2", "p3b"}
    # the learner, alone in its group, learned each labelled event exactly once, and the
    # ghosts are the only orphans
    assert report["events"] == report["learned"] == N_EVENTS
    assert report["pending"] == report["early_labels"] == report["expired"] == 0
    # its metric is the progressive one up to the order of a few records: it merges 12
    # partitions written while it reads, and a record can be released before an older one
    # not yet in the log on another partition (tests/kafka/test_roles.py pauses its learner
    # for the exact equality; this one must learn while events flow). Counted in events: 1%
    # of them (a full run on busy cores differed by 6, 1709 against 1703; the float
    # tolerance 5 / N_EVENTS had refused exactly 5)
    right, river_right = (round(a * N_EVENTS) for a in (report["metrics"]["Accuracy"],
                                                      river_reference(rows, DELAY)))
    assert abs(right - river_right) <= N_EVENTS // 100, (right, river_right)
