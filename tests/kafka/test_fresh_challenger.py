"""`--on-drift challenger` on a real broker (connectors/models/fresh.py): River's SEA stream,
every label inverted from its middle on; the learner's drift watch starts a fresh copy of the
served model, the learner is killed (SIGKILL) once the copy learns, a standby restores it from
the state topic, and `--auto-promote` makes it the served model. The model topic's newest
snapshot equals a model that learned from the label that showed the drift on, exactly, and the
drifted model learns on as a challenger."""

from __future__ import annotations

import re
import signal

from river_pa.connectors.replay import records, send_all
from river_pa.connectors.state.recovery import FORMER
from river_pa.linear_model import PAClassifier
from tests.connectors.test_auto_promotion import sea
from tests.kafka.test_learner_failover import ACTIVE, DELAY, learner, newest_snapshot

N = 3000
FRESH = ("--model-params", '{"C": 0.01}', "--on-drift", "challenger", "--auto-promote",
         "--auto-promote-cooldown", "1000")


def _learned(rows) -> PAClassifier:
    model = PAClassifier(C=0.01)
    for x, y in rows:
        model.learn_one(x, y)
    return model


def test_a_drift_starts_a_fresh_copy_that_survives_a_failover_and_is_promoted(kafka):
    rows = sea(0, drift=True)  # the drift in the middle of N events, its keys as JSON's
    rows = [({str(k): v for k, v in x.items()}, y) for x, y in rows[len(rows) // 2 - N // 2:][:N]]
    events, labels = kafka.topics("events", "labels", partitions=3)
    send_all(kafka.producer(), records(rows, DELAY), events, labels)
    group = f"{events}-learn"
    a = learner(kafka, events, labels, "a", group, *FRESH)
    kafka.wait_for_log("a", "starts afresh beside it (--on-drift challenger)", a, 120)
    a.send_signal(signal.SIGKILL)  # the copy is in the state topic from the next checkpoint
    a.wait()
    first = int(re.search(r"challenger fresh-(\d+) starts afresh", kafka.log("a"))[1])
    assert N // 2 < first <= N // 2 + 400  # the drift seen within 400 labels
    b = learner(kafka, events, labels, "b", group, *FRESH)
    kafka.wait_for_log("b", ACTIVE, b, 120)
    report = kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] == N, b, 240)
    promoted = re.search(rf"fresh-{first} promoted by --auto-promote .* at label (\d+)",
                         kafka.log("a") + kafka.log("b"))
    assert promoted and first < int(promoted[1]) < N, kafka.log("b")
    # served under --model's name (its model and parameters), the drifted model a challenger
    assert report["served"] == "PAClassifier" and list(report["challengers"]) == [FORMER]
    assert report["challengers"][FORMER]["learned"] == N
    kafka.wait_for_report("b.jsonl", lambda r: r["model_learned"] == N, b, 60)
    assert kafka.stop(b) == 0
    snapshot = newest_snapshot(kafka, f"{events}.model", "model", False)
    reference = _learned(rows[first - 1:])
    assert all(snapshot["model"].predict_proba_one(x) == reference.predict_proba_one(x)
               for x, _ in rows)
