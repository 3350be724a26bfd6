"""Models changed while serving, on a real broker: `river-pa models pin NAME VERSION`
(connectors/models/pinning.py) makes a predictor serve an earlier version of the model topic
while the learner learns on; the pin survives the learner's failover (a standby restores it
from the state topic and publishes no live model); a challenger added live with `models add
--backfill` (models/live.py, models/backfill.py) learns the retained history, joins, and ends
exactly as if it had been there from the start; `unpin` serves the live model again, and the
added challenger, promoted, serves; a version of its own from before, as a challenger, can be
pinned too. Every event is predicted once, each prediction names the version that made it,
and the learner's metric is the uninterrupted River run's."""

from __future__ import annotations

import json
import signal

from river import evaluate, metrics

from river_pa.cli import main
from river_pa.connectors.replay import send_all
from river_pa.connectors.state.recovery import FORMER
from river_pa.linear_model import PAClassifier
from tests.kafka.test_challengers import half_sent
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_learner_failover import (
    ACTIVE, DELAY, N_EVENTS, learner, newest_snapshot,
)


def _models(capsys, *argv) -> tuple[int, str]:
    status = main(["models", *argv])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_pin_add_unpin_and_promote_while_serving_through_a_learner_failover(kafka, elec2_path,
                                                                           capsys):
    rows, stream, half, events, labels, preds, group = half_sent(kafka, elec2_path)
    a = learner(kafka, events, labels, "a", group, "--keep-versions", "3")
    p = kafka.serve_stream(events, None, preds, "--role", "predict", name="p")
    first = [rid for kind, rid, _, _ in stream[:half] if kind == "event"]
    kafka.wait_for(preds, len(first), proc=p)
    labelled = sum(kind == "label" for kind, _, _, _ in stream[:half])
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] == labelled
                          and r["model_learned"] == r["learned"], a, 120)
    topics = ("--bootstrap-servers", kafka.bootstrap, "--events-topic", events,
              "--metrics-topic", f"{events}-metrics")
    status, out = _models(capsys, "list", "--json", *topics)
    assert status == 0, out
    versions = json.loads(out)["versions"]
    assert len(versions) == 3  # --keep-versions: the older ones are tombstoned
    old = versions[0]
    assert old["name"] == "PAClassifier" and old["learned"] < versions[-1]["learned"]
    status, out = _models(capsys, "pin", "PAClassifier", str(versions[0]["version"] - 1),
                          *topics)
    assert status == 1 and "holds no version" in out  # gone: nothing written
    status, out = _models(capsys, "pin", "PAClassifier", str(old["version"]), *topics)
    assert (status, out) == (0, f"pin PAClassifier {old['version']}: control record 0 of "
                                f"{events}.control: pinned\n")
    kafka.wait_for_log("p", f"{old['learned']} events learned; version {old['version']} pinned",
                       p, 120)
    a.send_signal(signal.SIGKILL)  # the standby restores the pin from the state topic
    a.wait()
    b = learner(kafka, events, labels, "b", group, "--keep-versions", "3")
    kafka.wait_for_log("b", ACTIVE, b, 120)
    # a challenger added live learns the retained history first, then joins (--backfill)
    status, out = _models(capsys, "add", "c02", 'PAClassifier{"C": 0.01}', "--backfill",
                          *topics)
    assert status == 0 and out.endswith(": added, backfilling\n"), out
    send_all(kafka.producer(), stream[half:], events, labels)
    kafka.wait_for(preds, N_EVENTS, proc=p)
    report = kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] == N_EVENTS, b, 240)
    assert report["pinned"] == {"name": "PAClassifier", "version": old["version"]}
    assert report["metrics"] == {"Accuracy": river_reference(rows, DELAY)}  # learned on, exact
    assert newest_snapshot(kafka, f"{events}.model", "model", False)["pinned"] == old["version"]
    made = {}
    for record in kafka.read_all(preds):
        value = json.loads(record.value)
        assert value["id"] not in made
        made[value["id"]] = (value["model_version"], value["n_learned"])
    assert len(made) == N_EVENTS
    # the events sent after the pin are all predicted by the pinned version
    assert {made[rid] for rid in made if rid not in set(first)} == {
        (old["version"], old["learned"])}
    report = kafka.wait_for_report("b.jsonl", lambda r: "c02" in r["challengers"], b, 120)
    added = report["challengers"]["c02"]  # as if it had learned from the start
    assert added["learned"] == N_EVENTS and added["backfilled"]["labels"] >= labelled
    assert added["metrics"] == {"Accuracy": evaluate.progressive_val_score(
        rows, PAClassifier(C=0.01), metrics.Accuracy(), delay=DELAY).get()}
    c02 = PAClassifier(C=0.01)
    for x, y in rows:
        c02.learn_one(x, y)
    status, out = _models(capsys, "unpin", *topics)
    assert status == 0 and out.endswith(": unpinned\n"), out
    kafka.wait_for_log("p", f"(PAClassifier, {N_EVENTS} events learned)", p, 120)
    assert "pinned" not in newest_snapshot(kafka, f"{events}.model", "model", False)
    status, out = _models(capsys, "promote", "c02", *topics)  # the predictor follows
    assert status == 0 and out.endswith(": promoted\n"), out
    kafka.wait_for_log("p", f"(c02, {N_EVENTS} events learned)", p, 120)
    served = newest_snapshot(kafka, f"{events}.model", "model", False)["model"]
    assert [served.predict_proba_one(x) for x, _ in rows] == [c02.predict_proba_one(x)
                                                            for x, _ in rows]
    # each model keeps its own versions: c02's as a challenger, the demoted model's since
    status, out = _models(capsys, "list", "--json", *topics)
    versions = json.loads(out)["versions"]
    assert {v["snapshot"] for v in versions if v["name"] == FORMER} == {f"model@{FORMER}"}
    own = next(v for v in versions if v["snapshot"] == "model@c02")
    assert own["name"] == "c02" and len({v["version"] for v in versions}) == len(versions)
    status, out = _models(capsys, "pin", "c02", str(own["version"]), *topics)
    assert status == 0 and out.endswith(": pinned\n"), out
    kafka.wait_for_log("p", f"(c02, {own['learned']} events learned; version {own['version']} "
                            "pinned)", p, 120)
    assert kafka.stop(b) == 0 and kafka.stop(p) == 0
    # stopped while pinned, the learner published no live model over the pin
    assert newest_snapshot(kafka, f"{events}.model", "model", False)["pinned"] == own["version"]
