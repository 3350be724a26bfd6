"""The drift watch (observe/drift.py) in the daemon's loop, on the in-memory topics of
fake_kafka.py: a concept that flips is found within a few dozen labels, falls are not drifts,
`--on-drift reset` starts the model afresh at the label that showed the drift, and a daemon
restored from its checkpoint finds the drifts an uninterrupted one finds."""

from __future__ import annotations

import logging
import random
import re

import pytest
from river import drift, metrics

from river_pa import cli
from river_pa.connectors.config import ServeConfig
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.observe.drift import DriftWatch
from river_pa.connectors.observe.metrics import collect
from river_pa.connectors.observe.reporting import Stats
from river_pa.connectors.replay import records
from river_pa.connectors.roles.predictor import Predictor
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import serve_until_learned

N, FLIP, DELAY = 1200, 600, 20


def _rows() -> list[tuple[dict, bool]]:
    """N events of two features; the concept flips at event FLIP (the label is negated)."""
    rng = random.Random(3)
    rows = []
    for i in range(N):
        x = {"a": rng.random(), "b": rng.random()}
        y = x["a"] > x["b"]
        rows.append((x, y if i < FLIP else not y))
    return rows


def _daemon(cluster, tmp_path, **settings) -> Daemon:
    cfg = ServeConfig(model="PAClassifier", events_topic="ev", labels_topic="lab",
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), checkpoint_every=100, **settings)
    return Daemon(cfg, PAClassifier())


def _rises(caplog) -> list[int]:
    """The label of each drift the log reports."""
    return [int(m.group(1)) for r in caplog.records
            if (m := re.search(r"^drift \d+: the errors rose \(.*, label (\d+),", r.getMessage()))]


@pytest.fixture
def stream(fake_clients):
    fake_clients.topic("ev"), fake_clients.topic("lab")
    fake_clients.send_all(records(_rows(), DELAY, start_ms=0), "ev", "lab")
    return fake_clients


def _replayed_watch(on_drift: str, **params) -> tuple[DriftWatch, PAClassifier]:
    """The watch and the model of an independent replay: predict each event, score and learn
    its label DELAY events later, in the order `records` sends them."""
    model, watch, waiting = PAClassifier(**params), DriftWatch(drift.ADWIN()), {}
    rows = _rows()
    for kind, rid, _, _ in records(rows, DELAY, start_ms=0):
        x, y = rows[int(rid[1:])]
        if kind == "event":
            waiting[rid] = model.predict_one(x)
            continue
        if watch.update(y, waiting.pop(rid)) == "rise" and on_drift == "reset":
            model = PAClassifier(**params)
        model.learn_one(x, y)
    return watch, model


def test_a_flipped_concept_is_a_drift_within_a_few_dozen_labels(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = _daemon(stream, tmp_path)
    serve_until_learned(daemon, N)
    rises = _rises(caplog)
    assert rises and FLIP < rises[0] <= FLIP + 60, rises  # labels are counted from 1
    assert all(r > FLIP for r in rises)  # the stream's first concept raised no alarm
    watch, model = _replayed_watch("log")
    figures = daemon.figures()["drift"]
    assert figures == watch.snapshot() == {"detector": "ADWIN", "rises": len(rises),
                                           "falls": watch.falls,
                                           "labels_since": watch.labels_since}
    families = {f.name: f for f in collect(daemon)}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for s in families["river_pa_drifts"].samples}
    model_label = ("model", "PAClassifier")
    assert samples == {("river_pa_drifts_total", (("direction", "rise"), model_label)): len(rises),
                       ("river_pa_drifts_total", (("direction", "fall"), model_label)): watch.falls}
    [since] = families["river_pa_labels_since_drift"].samples
    assert since.value == watch.labels_since
    rows = _rows()
    assert [daemon.slot.model.predict_proba_one(x) for x, _ in rows] == \
        [model.predict_proba_one(x) for x, _ in rows]  # the watch leaves the model alone


def test_reset_on_drift_starts_the_model_afresh_at_the_drift(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = _daemon(stream, tmp_path, on_drift="reset")
    serve_until_learned(daemon, N)
    rises = _rises(caplog)
    assert rises and "the model starts afresh (--on-drift reset)" in caplog.text
    watch, model = _replayed_watch("reset")
    assert daemon.figures()["drift"] == watch.snapshot()
    rows = _rows()
    assert [daemon.slot.model.predict_proba_one(x) for x, _ in rows] == \
        [model.predict_proba_one(x) for x, _ in rows]
    # the reset model beats the one that carried the first concept over, on the second
    accuracy = metrics.Accuracy()
    for x, y in rows[-200:]:
        accuracy.update(y, daemon.slot.model.predict_one(x))
    assert accuracy.get() > 0.9


def test_a_challenger_follows_on_drift_too(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = _daemon(stream, tmp_path, on_drift="reset", challenger=['c05=PAClassifier{"C": 0.5}'])
    serve_until_learned(daemon, N)
    watch, model = _replayed_watch("reset", C=0.5)
    challenger = daemon.challengers["c05"]
    assert challenger.stats.drift.snapshot() == watch.snapshot() and watch.rises
    rows = _rows()
    assert [challenger.slot.model.predict_proba_one(x) for x, _ in rows] == \
        [model.predict_proba_one(x) for x, _ in rows]
    assert "the errors rose (ADWIN, model c05, label " in caplog.text


def test_a_restored_daemon_finds_the_drifts_of_an_uninterrupted_one(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    stopped = _daemon(stream, tmp_path, on_drift="reset")
    serve_until_learned(stopped, FLIP + 10)  # stopped mid-change
    restored = _daemon(stream, tmp_path, on_drift="reset")
    serve_until_learned(restored, N)
    watch, model = _replayed_watch("reset")
    assert restored.figures()["drift"] == watch.snapshot()
    assert _rises(caplog)[0] > FLIP + 10  # found by the restored daemon
    rows = _rows()
    assert [restored.slot.model.predict_proba_one(x) for x, _ in rows] == \
        [model.predict_proba_one(x) for x, _ in rows]


def test_a_state_without_a_watch_or_with_another_detector_starts_it_afresh():
    stats = Stats([metrics.Accuracy()], 10, drift.ADWIN())
    for _ in range(50):
        stats.score(True, False, None)
    assert stats.use_detector(drift.ADWIN()) is False  # the same: kept with what it saw
    assert stats.drift.labels_since == 50
    assert stats.use_detector(drift.ADWIN(delta=0.01)) is True
    assert stats.drift.labels_since == 0 and stats.drift.detector.delta == 0.01
    del stats.drift  # as pickled before drift was watched: the class's None
    assert stats.drift is None and stats.score(True, False, None) is None
    assert stats.snapshot(0)["drift"] is None
    assert stats.use_detector(drift.ADWIN()) is True and stats.drift.rises == 0
    assert stats.use_detector(None) is True and stats.drift is None


def test_a_predictor_watches_nothing(fake_clients, tmp_path):
    # it scores no prediction; tests/kafka/test_metrics.py: its endpoint has no drift series
    predictor = Predictor(ServeConfig(role="predict", events_topic="ev", metrics_topic=None,
                                      report_path=None, checkpoint_path=str(tmp_path / "c")),
                          PAClassifier())
    assert predictor.stats.drift is None and predictor.stats.snapshot(0)["drift"] is None


@pytest.mark.parametrize("argv,line", [
    (["--drift-params", '{"delta": "x"}'], "river-pa serve: drift_params {'delta': 'x'}: delta "
     "must be a finite number, got 'x'"),
    (["--drift-params", '{"delta": 2}'], "river-pa serve: drift_params {'delta': 2}: delta must "
     "be a probability: > 0 and < 1, got 2"),
    (["--drift-detector", "PageHinkley", "--drift-params", '{"threshold": -5}'],
     "river-pa serve: drift_params {'mode': 'up', 'threshold': -5}: threshold must be > 0"),
    (["--drift-detector", "none", "--drift-params", '{"delta": 0.1}'],
     "river-pa serve: drift_params {'delta': 0.1} are given but drift_detector is none"),
    (["--drift-detector", "none", "--on-drift", "reset"],
     "river-pa serve: on_drift=reset needs a drift detector, and drift_detector is none"),
    (["--drift-detector", "PageHinkley", "--drift-params", '{"speed": 1}'],
     "river-pa serve: drift_params {'mode': 'up', 'speed': 1} are not PageHinkley's: TypeError: "),
])
def test_bad_drift_params_are_status_2_naming_them(capsys, argv, line):
    assert cli.main(["serve", *argv, "--bootstrap-servers", "127.0.0.1:1"]) == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(line), err


def test_an_unknown_detector_or_reaction_is_refused_by_name(capsys, tmp_path):
    assert cli.main(["serve", "--drift-detector", "KSWIN"]) == 2
    assert "--drift-detector: invalid choice: 'KSWIN'" in capsys.readouterr().err
    toml = tmp_path / "serve.toml"
    toml.write_text('on_drift = "retrain"\n')
    assert cli.main(["serve", "--config", str(toml), "--bootstrap-servers", "127.0.0.1:1"]) == 1
    assert capsys.readouterr().err.strip() == ("river-pa serve: on_drift 'retrain': 'retrain' is "
                                               "not log, reset or challenger")
