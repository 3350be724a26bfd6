"""Promotion while serving (models/control.py, state/recovery.py's `_promote_live`), on the
in-memory topics of fake_kafka.py: a control record or `--auto-promote` makes a challenger the
served model between two records; both models continue exactly; every event is predicted once;
a restart with the same settings keeps the promotion; bad control records change nothing."""

from __future__ import annotations

import json
import logging
import time

import pytest

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka import admin
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.models import control
from river_pa.connectors.replay import records
from river_pa.connectors.state.recovery import FORMER
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import serve_until_learned
from tests.connectors.test_challengers import DELAY, N, _river, _rows, _same_model

KEY = b"k" * 32


@pytest.fixture
def stream(fake_clients, monkeypatch):  # test_challengers.py's, with a control topic
    for topic in ("ev", "lab", "ctl"):
        fake_clients.topic(topic)
    fake_clients.send_all(records(_rows(), DELAY, start_ms=0), "ev", "lab")
    monkeypatch.setattr(admin, "ensure_topic", lambda cfg, topic: None)
    return fake_clients


def _daemon(tmp_path, **settings) -> Daemon:
    cfg = ServeConfig(**{
        "model": "PAClassifier", "model_params": {"C": 0.01}, "events_topic": "ev",
        "labels_topic": "lab", "predictions_topic": "preds", "metrics_topic": None,
        "report_path": None, "checkpoint_path": str(tmp_path / "ckpt"), "checkpoint_every": 60,
        "challenger": ["c1=PAClassifier"], "control_topic": "ctl", **settings})
    return Daemon(cfg, PAClassifier(C=0.01))


def _write_at(daemon: Daemon, learned: int, *records) -> Daemon:
    """Append `records` ((value, headers) pairs) to the control topic once `daemon` has learned
    `learned` events."""
    step = daemon._step

    def step_then_write():
        step()
        if daemon.stats.counts["learned"] >= learned and not daemon.written:
            for value, headers in records:
                daemon.control_reader.consumer.cluster.append("ctl", value, b"promote",
                                                              headers=headers)
            daemon.written = True

    daemon.written = False
    daemon._step = step_then_write
    return daemon


def _serve_until(daemon: Daemon, done) -> Daemon:
    step = daemon._step

    def step_then_check():
        step()
        daemon.stopping = done(daemon)

    daemon._step = step_then_check
    assert daemon.run() == 0
    return daemon


def _reference(model) -> PAClassifier:
    for x, y in _rows():
        model.learn_one(x, y)
    return model


def test_a_control_record_promotes_a_challenger_between_two_records(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    _, value, headers = control.encode("promote", "c1", None, "ctl")
    daemon = serve_until_learned(_write_at(_daemon(tmp_path), 200, (value, headers)), N)
    assert daemon.slot.name == "c1" and list(daemon.challengers) == [FORMER]
    assert "c1 promoted by control record 0 of ctl" in caplog.text
    # both models continue exactly: each as if learned alone on the whole stream
    assert _same_model(daemon.slot.model, _reference(PAClassifier()))
    assert _same_model(daemon.challengers[FORMER].slot.model, _reference(PAClassifier(C=0.01)))
    figures = daemon.figures()
    assert figures["served"] == "c1"
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier())}
    assert figures["challengers"][FORMER]["metrics"] == {"Accuracy": _river(PAClassifier(C=0.01))}
    assert figures["learned"] == figures["challengers"][FORMER]["learned"] == N
    # every event predicted once; by the model serving when it came
    predictions = stream.values("preds")
    assert sorted(p["id"] for p in predictions) == sorted(f"e{i}" for i in range(N))
    names = [p["model"] for p in predictions]
    switch = names.index("c1")
    assert 200 <= switch and set(names[:switch]) == {"PAClassifier"} and set(names[switch:]) == {
        "c1"}
    assert daemon.control["offset"] == 1
    assert figures["control"] == {"topic": "ctl", "next_offset": 1,
                                  "outcomes": {"0": "promoted"}}


def test_a_handled_control_record_is_reported_at_once(stream, tmp_path):
    # an idle exactly-once learner sent no report after a promotion (its transaction was
    # committed before one was due): `models promote` waited in vain
    stream.topic("m")
    _, value, headers = control.encode("promote", "c1", None, "ctl")
    never = {"metrics_topic": "m", "report_every": 10**6, "report_seconds": 10**6}
    serve_until_learned(_write_at(_daemon(tmp_path, **never), 200, (value, headers)), N)
    first, *_ = stream.values("m")
    assert 200 <= first["learned"] < N and first["served"] == "c1"
    assert first["control"] == {"topic": "ctl", "next_offset": 1,
                                "outcomes": {"0": "promoted"}}


def test_a_restart_with_the_same_settings_keeps_the_promotion(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    _, value, headers = control.encode("promote", "c1", None, "ctl")
    first = serve_until_learned(_write_at(_daemon(tmp_path), 100, (value, headers)), 300)
    assert first.slot.name == "c1"
    caplog.clear()
    again = serve_until_learned(_daemon(tmp_path), N)
    assert "c1 serves since a promotion" in caplog.text
    assert "promoted" not in caplog.text  # the record was obeyed once, not again
    assert again.slot.name == "c1" and list(again.challengers) == [FORMER]
    assert _same_model(again.slot.model, _reference(PAClassifier()))
    assert _same_model(again.challengers[FORMER].slot.model, _reference(PAClassifier(C=0.01)))
    assert again.figures()["metrics"] == {"Accuracy": _river(PAClassifier())}
    # promoting --model back: the state as if never promoted, and a restart keeps that too
    _, value, headers = control.encode("promote", FORMER, None, "ctl")
    stream.append("ctl", value, b"promote", headers=headers)
    back = _serve_until(_daemon(tmp_path), lambda d: d.control["offset"] == 2)
    assert back.slot.name == "PAClassifier" and list(back.challengers) == ["c1"]
    assert {k: back.control[k] for k in ("offset", "served", "configured")} == {
        "offset": 2, "served": None, "configured": None}
    assert _same_model(back.slot.model, _reference(PAClassifier(C=0.01)))


OTHER_KEY = control.encode("promote", "c1", b"other", "ctl")
ELSEWHERE = control.encode("promote", "c1", None, "other.control")


@pytest.mark.parametrize("value,headers,key,reason", [
    (b"not json", [], None, "not JSON"),
    (b'{"command": "drop", "model": "c1"}', [], None,
     "no command of promote, pin, unpin, add, remove with a model name and issued_at_ms"),
    (control.encode("promote", "c1", None, "ctl")[1], [], KEY,
     "unsigned, and a --checkpoint-key is configured"),
    (OTHER_KEY[1], OTHER_KEY[2], KEY, "its HMAC does not verify"),
    (ELSEWHERE[1], ELSEWHERE[2], None, "it was issued for the control topic 'other.control'"),
], ids=["garbage", "unknown-command", "unsigned", "forged", "another-deployment"])
def test_a_bad_control_record_is_skipped_and_changes_nothing(stream, tmp_path, caplog, value,
                                                             headers, key, reason):
    settings = {"checkpoint_key": key.decode()} if key else {}
    daemon = serve_until_learned(_write_at(_daemon(tmp_path, **settings), 100,
                                           (value, headers)), N)
    assert daemon.slot.name == "PAClassifier" and daemon.invalid_control == 1
    assert f"control record 0 of ctl skipped: {reason}" in caplog.text
    figures = daemon.figures()
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier(C=0.01))}
    [(offset, outcome)] = figures["control"]["outcomes"].items()
    assert offset == "0" and outcome.startswith(f"skipped: {reason}")


def test_an_unknown_name_changes_nothing(stream, tmp_path, caplog):
    _, value, headers = control.encode("promote", "nobody", None, "ctl")
    daemon = serve_until_learned(_write_at(_daemon(tmp_path), 100, (value, headers)), N)
    assert daemon.slot.name == "PAClassifier" and daemon.invalid_control == 0
    assert "promote 'nobody': no model of that name (the served model is 'PAClassifier', the " \
           "challengers 'c1'); nothing changes" in caplog.text
    assert daemon.figures()["control"]["outcomes"] == {"0": "no model of that name"}


def _reports(monkeypatch, *reports) -> None:
    """`newest_report` gives `reports` one after the other (the learner's, as the metrics
    topic would; on a real broker: tests/kafka/test_challengers.py)."""
    from river_pa.connectors.models import commands

    reports = iter(reports)
    monkeypatch.setattr(commands, "newest_report", lambda cfg, timeout_s: next(reports))
    monkeypatch.setattr(commands.time, "sleep", lambda s: None)


def _handled(time_ms: int, served: str, next_offset: int = 1, last=None, topic="ctl",
             **more) -> dict:
    return {"time_ms": time_ms, "served": served, "challengers": {}, **more,
            "control": {"topic": topic, "next_offset": next_offset, "outcomes": last or {}}}


CFG = ServeConfig(control_topic="ctl")


@pytest.mark.parametrize("outcome,status", [
    ("promoted", 0), ("the served model already", 0), ("skipped: its HMAC does not verify", 1),
    ("no model of that name", 1)])
def test_models_promote_waits_for_the_report_of_its_record(monkeypatch, outcome, status):
    # `river-pa models promote --wait`: what became of its record (offset 0), from the first
    # report written after the one it checked the name against (time 100) that handled it
    from river_pa.connectors.models import commands

    last = {"0": outcome, "1": "promoted"}  # and a later record
    _reports(monkeypatch, None, _handled(90, "PAClassifier", 0),
             _handled(100, "PAClassifier", 1, last),  # not newer than the one checked against
             _handled(105, "PAClassifier", 1, last, topic="other.control"),  # not its topic
             _handled(110, "c1", 1, last))
    assert commands._outcome(CFG, 0, 60, 100, commands.PROMOTED,
                             commands._serves("c1")) == (status, f": {outcome}")


@pytest.mark.parametrize("name,served,challengers,status", [
    ("c1", "c1", {FORMER: {}}, 0), ("c1", "c2", {FORMER: {}, "c1": {}}, 1),
    (FORMER, "PAClassifier", {"c1": {}}, 0), (FORMER, "c1", {FORMER: {}}, 1)])
def test_models_promote_after_later_records_or_a_restart_reads_the_served_model(
        monkeypatch, name, served, challengers, status):
    # the report's last record is a later one (or none: the learner restarted): NAME serves,
    # or (promoting back) no challenger is the former served model
    from river_pa.connectors.models import commands

    _reports(monkeypatch, _handled(110, served, 3, {"2": "promoted"}, challengers=challengers))
    assert commands._outcome(CFG, 0, 60, 100, commands.PROMOTED, commands._serves(name)) == (
        status, f": handled; {served!r} serves now")


def test_models_promote_says_when_no_report_came_in_time(monkeypatch):
    from river_pa.connectors.models import commands

    monkeypatch.setattr(commands, "newest_report", lambda cfg, timeout_s: None)
    status, said = commands._outcome(CFG, 0, 0.01, -1, commands.PROMOTED,
                                     commands._serves("c1"))
    assert status == 1 and said.startswith("; no report of a learner says it was handled "
                                           "within 0.01 s")


def test_auto_promote_promotes_the_challenger_that_beats_the_served_model(stream, tmp_path,
                                                                         caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = serve_until_learned(_daemon(tmp_path, auto_promote=True, challenger_min_labels=100,
                                         rolling_window=300, auto_promote_cooldown=0), N)
    assert daemon.slot.name == "c1" and list(daemon.challengers) == [FORMER]
    line = _auto_promotion(caplog)
    assert line.startswith("c1 promoted by --auto-promote (better on ")
    assert f") at label {daemon.promoted_at}: it serves from now on" in line
    assert _same_model(daemon.slot.model, _reference(PAClassifier()))
    # the former served model's test starts afresh: it has not beaten c1 since
    assert not daemon.challengers[FORMER].duel.beats


def _auto_promotion(caplog) -> str:
    [line] = [r.getMessage() for r in caplog.records if "promoted by --auto-promote" in
              r.getMessage()]
    return line


def test_auto_promote_waits_for_its_cooldown(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = serve_until_learned(_daemon(tmp_path, auto_promote=True, challenger_min_labels=100,
                                         rolling_window=300, auto_promote_cooldown=300), N)
    # c1's test said it beats at label 110 (the test above promotes it there); the promotion
    # waited for label 300, where it still did
    messages = [r.getMessage() for r in caplog.records]
    beats = next(i for i, m in enumerate(messages) if m.startswith("challenger c1 beats"))
    assert "on the last 110 labels" in messages[beats]
    assert messages.index(_auto_promotion(caplog)) > beats
    assert daemon.promoted_at == 300 and daemon.slot.name == "c1"
    assert "at label 300: it serves from now on" in _auto_promotion(caplog)
    assert daemon._state()["promoted_at"] == 300  # kept through a failover


def test_shadow_writes_the_challengers_predictions_into_each_record(stream, tmp_path):
    daemon = serve_until_learned(_daemon(tmp_path, shadow=True), N)
    rows, c1, want = _rows(), PAClassifier(), {}
    for kind, rid, _, _ in records(rows, DELAY, start_ms=0):  # c1 alone, progressively
        x, y = rows[int(rid[1:])]
        if kind == "event":
            want[rid] = c1.predict_one(x)
        else:
            c1.learn_one(x, y)
    got = {p["id"]: p["shadow"] for p in stream.values("preds")}
    assert got == {rid: {"c1": y_pred} for rid, y_pred in want.items()}
    assert daemon.slot.name == "PAClassifier"  # the records' own predictions: the served one's


def test_a_replayed_command_is_refused(stream, tmp_path, caplog):
    promote = control.encode("promote", "c1", KEY, "ctl")
    time.sleep(0.002)  # issued a millisecond later at least
    back = control.encode("promote", FORMER, KEY, "ctl")
    daemon = serve_until_learned(_write_at(_daemon(tmp_path, checkpoint_key=KEY.decode()), 100,
                                           promote[1:], back[1:], promote[1:]), N)
    assert daemon.slot.name == "PAClassifier" and daemon.invalid_control == 1
    assert "control record 2 of ctl skipped: issued no later than the last command obeyed (a " \
           "replayed record)" in caplog.text


def test_a_record_issued_for_its_offset_is_obeyed_whatever_the_clocks(stream, tmp_path,
                                                                     caplog):
    # two commands started at once, or a host whose clock is an hour ahead: the later ones
    # were refused as replays (helper-31). A record issued for its offset is ordered by it.
    ahead = control.encode("promote", "c1", KEY, "ctl", at=0)
    value = json.loads(ahead[1])
    value["issued_at_ms"] += 3_600_000  # an hour ahead
    ahead = (json.dumps(value).encode(), [("hmac", control._signature(KEY, json.dumps(
        value).encode()).encode())])
    behind = control.encode("promote", FORMER, KEY, "ctl", at=1)[1:]
    copy = control.encode("promote", "c1", KEY, "ctl", at=1)[1:]  # overtaken by `behind`
    daemon = serve_until_learned(_write_at(_daemon(tmp_path, checkpoint_key=KEY.decode()), 100,
                                           ahead, behind, copy, ahead), N)
    assert daemon.slot.name == "PAClassifier" and daemon.invalid_control == 2
    assert "control record 2 of ctl skipped: issued for offset 1, written at 2: another " \
           "command was written first, or it is a copy" in caplog.text
    assert "control record 3 of ctl skipped: issued for offset 0, written at 3" in caplog.text


def test_a_served_name_given_other_parameters_serves_as_it_is(stream, tmp_path, caplog):
    _, value, headers = control.encode("promote", "c1", None, "ctl")
    serve_until_learned(_write_at(_daemon(tmp_path), 100, (value, headers)), 300)
    again = _daemon(tmp_path, challenger=['c1=PAClassifier{"C": 0.02}'])
    again.consumer = None
    again.load()
    assert again.slot.name == "c1" and again.slot.model.C == 1.0
    assert list(again.challengers) == [FORMER]
    assert "--challenger c1 names other parameters than the c1 serving" in caplog.text


@pytest.mark.parametrize("topic,other", [("ev.model", "model_topic"), ("ev", "events_topic"),
                                         ("ev.lease", "lease topic")])
def test_a_control_topic_of_another_use_is_refused(capsys, topic, other):
    from river_pa import cli

    argv = ["serve", "--events-topic", "ev", "--control-topic", topic, "--challenger",
            "c=PAClassifier", "--bootstrap-servers", "127.0.0.1:1"]
    assert cli.main(argv) == 2
    assert f"control_topic {topic!r} is also the {other}" in capsys.readouterr().err


def _trained_on_last(k: int, model) -> PAClassifier:
    for x, y in _rows()[N - k:]:
        model.learn_one(x, y)
    return model


def test_a_challenger_added_live_learns_from_then_on_and_a_restart_keeps_it(stream, tmp_path,
                                                                            caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    _, value, headers = control.encode("add", "c2", None, "ctl", spec='PAClassifier{"C": 0.1}')
    small = {"max_poll_records": 20}
    first = serve_until_learned(_write_at(_daemon(tmp_path, **small), 100, (value, headers)),
                                300)
    assert list(first.challengers) == ["c1", "c2"]
    assert "challenger c2 added" in caplog.text
    at_add = first.stats.counts["learned"] - first.challengers["c2"].stats.counts["learned"]
    assert 100 <= at_add <= 140  # the record came after a batch of 20 from label 100 on
    caplog.clear()
    again = serve_until_learned(_daemon(tmp_path, **small), N)  # --challenger names c1 only
    assert list(again.challengers) == ["c1", "c2"] and "starts from nothing" not in caplog.text
    c2 = again.challengers["c2"]
    learned = c2.stats.counts["learned"]  # continued: every label after the record's batch
    assert learned == N - at_add
    assert _same_model(c2.slot.model, _trained_on_last(learned, PAClassifier(C=0.1)))
    assert _same_model(again.challengers["c1"].slot.model, _reference(PAClassifier()))
    assert again.control["models"] == {"c2": 'PAClassifier{"C": 0.1}'}


def test_a_challenger_removed_live_stays_removed_after_a_restart(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    _, value, headers = control.encode("remove", "c1", None, "ctl")
    first = serve_until_learned(_write_at(_daemon(tmp_path), 100, (value, headers)), 300)
    assert first.challengers == {} and first.control_recent == {"0": "removed"}
    again = serve_until_learned(_daemon(tmp_path), N)  # --challenger still names c1
    assert again.challengers == {}
    assert "challenger c1: removed by `river-pa models remove`" in caplog.text
    assert _same_model(again.slot.model, _reference(PAClassifier(C=0.01)))


@pytest.mark.parametrize("command,name,spec,outcome", [
    ("add", "c2", "os:system", "not added: model 'os:system' is not one of river-pa's "
                               "learners"),
    ("add", "c2", "PAClassifier", "not added: the same model and parameters as c1"),
    ("add", "c1", 'PAClassifier{"C": 0.5}', "not added: a model named 'c1' exists"),
    ("add", "c2", 'PARegressor', "not added: challenger c2: a regressor cannot challenge"),
    ("add", "c2", 'PAClassifier{"C": ' + "[" * 1500 + "]" * 1500 + "}",  # RecursionError
     "not added: challenger c2: parameters"),
    ("remove", "PAClassifier", None, "not removed: it serves"),
    ("remove", "c9", None, "not removed: no challenger of that name"),
])
def test_a_refused_add_or_remove_changes_nothing(stream, tmp_path, command, name, spec, outcome):
    _, value, headers = control.encode(command, name, None, "ctl", spec=spec)
    daemon = serve_until_learned(_write_at(_daemon(tmp_path), 100, (value, headers)), N)
    assert daemon.control_recent["0"].startswith(outcome)
    assert list(daemon.challengers) == ["c1"] and daemon.control["models"] == {}
    assert _same_model(daemon.challengers["c1"].slot.model, _reference(PAClassifier()))


def test_a_challenger_added_with_backfill_learns_the_history_then_joins(stream, tmp_path,
                                                                        caplog):
    # its model and metric are those of a challenger present from the start: River's
    # progressive validation over the whole stream, though it came at label 100
    caplog.set_level(logging.INFO, "river_pa.serve")
    _, value, headers = control.encode("add", "c2", None, "ctl", spec='PAClassifier{"C": 0.1}',
                                       backfill=True)
    small = {"max_poll_records": 20}
    daemon = _serve_until(_write_at(_daemon(tmp_path, **small), 100, (value, headers)),
                          lambda d: d.stats.counts["learned"] == N and "c2" in d.challengers)
    assert daemon.control_recent["0"] == "added, backfilling"
    assert "challenger c2 joined the live models after backfilling" in caplog.text
    c2 = daemon.challengers["c2"]
    assert _same_model(c2.slot.model, _reference(PAClassifier(C=0.1)))
    figures = daemon.figures()["challengers"]["c2"]
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier(C=0.1))}
    # it joined mid-stream: live taught it the rest, scoring its predictions of the pending
    assert figures["learned"] == N and 100 <= figures["backfilled"]["labels"] < N - 100
    # its test against the served model counts only the labels after it joined (the served
    # model predicted none of the history)
    duel = figures["versus_served"]
    assert 0 < duel["window"] <= N - figures["backfilled"]["labels"]
    assert figures["backfilled"]["from_offsets"] == {"ev:0": 0, "lab:0": 0}
    assert daemon.control["backfilling"] == [] and daemon.backfills == {}


def test_a_backfill_cut_by_a_restart_starts_again_and_ends_the_same(stream, tmp_path):
    _, value, headers = control.encode("add", "c2", None, "ctl", spec='PAClassifier{"C": 0.1}',
                                       backfill=True)
    small = {"max_poll_records": 20}
    first = serve_until_learned(_write_at(_daemon(tmp_path, **small), 100, (value, headers)),
                                160)
    assert first.control["backfilling"] == ["c2"] and "c2" not in first.challengers
    again = _serve_until(_daemon(tmp_path, **small),
                         lambda d: d.stats.counts["learned"] == N and "c2" in d.challengers)
    c2 = again.challengers["c2"]
    assert _same_model(c2.slot.model, _reference(PAClassifier(C=0.1)))
    assert again.figures()["challengers"]["c2"]["metrics"] == {
        "Accuracy": _river(PAClassifier(C=0.1))}


def test_the_configured_model_cannot_be_removed_while_another_serves(stream, tmp_path):
    # a restart loads the state through --model: removed, no learner of the group could start
    promote = control.encode("promote", "c1", None, "ctl", at=0)
    remove = control.encode("remove", FORMER, None, "ctl", at=1)
    daemon = serve_until_learned(_write_at(_daemon(tmp_path), 100, promote[1:], remove[1:]), N)
    assert daemon.control_recent == {"0": "promoted", "1": "not removed: it is --model, which "
                                     "a restart loads the state with (promote it back, or start "
                                     "a learner with another --model)"}
    assert list(daemon.challengers) == [FORMER]


@pytest.mark.parametrize("version,line", [
    (None, "no model version published (none yet, or --role both, which publishes none)"),
    (4, "model version 4 (900 events learned when published)")])
def test_models_list_names_the_version_or_says_there_is_none(monkeypatch, capsys, version,
                                                             line):
    # helper-34: `--role both` printed "model version None (None events learned ...)"
    import argparse
    import time as clock

    from river_pa.connectors.models import commands

    report = _handled(int(clock.time() * 1000), "PAClassifier", model_version=version,
                      model_learned=900 if version else None, labelled=1000, learned=1000,
                      metrics={})
    monkeypatch.setattr(commands, "newest_report", lambda cfg, timeout_s=30: report)
    monkeypatch.setattr(commands, "_versions", lambda cfg, names: [])
    assert commands._list(CFG, argparse.Namespace(json=False)) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f" ago; {line}; control records skipped: 0"), first


def test_models_pin_of_another_models_version_says_whose_it_is(monkeypatch, capsys):
    # helper-35: "holds no version 15 of 'c01'" where 15 was the former served model's
    import argparse

    from river_pa.connectors.models import commands

    report = {"served": "c01", "challengers": {FORMER: {}}}
    asked = []
    monkeypatch.setattr(commands, "newest_report", lambda cfg, timeout_s=30: report)
    monkeypatch.setattr(commands, "_versions", lambda cfg, names: asked.append(names) or [
        {"version": 15, "name": FORMER}, {"version": 16, "name": "c01"}])
    assert commands._pin(CFG, argparse.Namespace(name="c01", version=15)) == 1
    assert asked == [["c01", "c01", FORMER]]  # every model's versions are listed
    assert capsys.readouterr().err == (
        f"river-pa models: {CFG.model_topic} holds no version 15 of 'c01': it is of "
        f"'{FORMER}' (versions that verify: 15 ({FORMER}), 16 (c01)); nothing written\n")


def test_the_models_commands_read_committed_records_only(monkeypatch):
    # helper-36: `list` named versions an --exactly-once learner had aborted
    import kafka

    from river_pa.connectors.models import commands

    made = []
    monkeypatch.setattr(kafka, "KafkaConsumer", lambda **settings: made.append(settings))
    commands._reader(CFG)
    assert made[0]["isolation_level"] == "read_committed" and made[0]["group_id"] is None


def test_models_remove_of_a_pinned_challenger_writes_nothing(monkeypatch, capsys):
    # helper-36: the record was written, then refused by the learner
    import argparse

    from river_pa.connectors.models import commands

    report = {"served": "PAClassifier", "challengers": {"c1": {}},
              "pinned": {"name": "c1", "version": 7}}
    monkeypatch.setattr(commands, "newest_report", lambda cfg, timeout_s=30: report)
    monkeypatch.setattr(commands, "_command", lambda *args: pytest.fail("a record was written"))
    assert commands._remove(CFG, argparse.Namespace(name="c1", wait=0)) == 1
    assert capsys.readouterr().err == ("river-pa models: version 7 of 'c1' is pinned "
                                       "(`river-pa models unpin` first); nothing written\n")
