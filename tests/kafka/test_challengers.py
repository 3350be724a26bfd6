"""Challengers on a real broker (connectors/models/challengers.py): a learner learns one beside
its model, and `river-pa models promote` promotes it while the learner and a predictor serve
(models/control.py): both models continue exactly, the predictor follows, every event is
predicted once, with the other model's prediction beside it (`--shadow`). Promotion by a
restart is tested in memory (tests/connectors/test_challengers.py); a learner restored from the
state topic after a promotion, by the fault harness (its `promote` kind)."""

from __future__ import annotations

import json
import time

from river import evaluate, metrics

from river_pa.cli import main
from river_pa.connectors.replay import elec2, records, send_all
from river_pa.connectors.state.recovery import FORMER
from river_pa.linear_model import PAClassifier
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_learner_failover import (
    DELAY, N_EVENTS, learner, newest_snapshot,
)


def half_sent(kafka, elec2_path):
    """(rows, stream, half, events, labels, preds, group): the Elec2 stream's first half sent
    to new topics, for the learners of `group`."""
    rows = elec2(str(elec2_path), N_EVENTS)
    stream = list(records(rows, DELAY))
    half = len(stream) // 2
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=3)
    send_all(kafka.producer(), stream[:half], events, labels)
    return rows, stream, half, events, labels, preds, f"{events}-learn"


def test_models_promote_switches_the_learner_and_the_predictor_while_serving(kafka, elec2_path,
                                                                           capsys):
    rows, stream, half, events, labels, preds, group = half_sent(kafka, elec2_path)
    a = learner(kafka, events, labels, "a", group, "--challenger", 'c01=PAClassifier{"C": 0.01}',
                "--shadow")
    p = kafka.serve_stream(events, None, preds, "--role", "predict", "--shadow", name="p")
    first = [rid for kind, rid, _, _ in stream[:half] if kind == "event"]
    kafka.wait_for(preds, len(first), proc=p)
    topics = ("--bootstrap-servers", kafka.bootstrap, "--events-topic", events,
              "--metrics-topic", f"{events}-metrics")
    deadline = time.monotonic() + 120  # a learner's report in the metrics topic to check with
    while main(["models", "list", *topics]) != 0:
        assert a.poll() is None and time.monotonic() < deadline, "no report with challengers"
        time.sleep(0.5)
    assert main(["models", "promote", "c02", *topics]) == 1  # a name it does not have
    assert "no challenger 'c02' in the learner's newest report (served: PAClassifier; " \
           "challengers: c01); nothing written" in capsys.readouterr().err
    # the command waits for the learner's report that it obeyed (--wait, 60 s by default)
    assert main(["models", "promote", "c01", *topics]) == 0
    assert capsys.readouterr().out == f"promote c01: control record 0 of {events}.control: " \
                                      "promoted\n"
    assert "c01 promoted by control record 0" in kafka.log("a")
    assert main(["models", "promote", "c01", *topics]) == 0  # the served one: nothing changes
    assert capsys.readouterr().out == f"promote c01: control record 1 of {events}.control: " \
                                      "the served model already\n"
    kafka.wait_for_log("p", f"from {events}.model (c01, ", p, 120)
    send_all(kafka.producer(), stream[half:], events, labels)
    report = kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == N_EVENTS, a, 240)
    kafka.wait_for(preds, N_EVENTS, proc=p)
    # the promoted model's metrics continue as the served model's; both models exact
    assert report["served"] == "c01"
    assert report["metrics"] == {"Accuracy": evaluate.progressive_val_score(
        rows, PAClassifier(C=0.01), metrics.Accuracy(), delay=DELAY).get()}
    assert report["challengers"][FORMER]["metrics"] == {
        "Accuracy": river_reference(rows, DELAY)}
    # every event predicted once: before the promotion by --model, after it by c01
    # (--shadow: with the other model's prediction)
    made = {}
    for record in kafka.read_all(preds):
        value = json.loads(record.value)
        assert value["id"] not in made
        made[value["id"]] = (value["model"], *value["shadow"])
    assert len(made) == N_EVENTS
    assert {made[rid] for rid in first} == {("PAClassifier", "c01")}
    assert {m for rid, m in made.items() if rid not in set(first)} == {("c01", FORMER)}
    kafka.wait_for_report("a.jsonl", lambda r: r["time_ms"] > report["time_ms"], a, 60)
    assert main(["models", "list", *topics]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[:3] == ["c01", "served", str(N_EVENTS)]
    assert lines[3].startswith(f"{FORMER:<28.28} challenger")
    assert kafka.stop(a) == 0 and kafka.stop(p) == 0
    snapshot = newest_snapshot(kafka, f"{events}.model", "model", False)
    assert snapshot["name"] == "c01" and snapshot["model"].C == 0.01
