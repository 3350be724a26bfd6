"""Challengers (models/challengers.py) in the daemon's loop, on the in-memory topics of
fake_kafka.py: each is River's progressive validation of its own model on the same stream, a
restored learner continues them, another set keeps, adds and drops them, and one that raises
leaves the champion as it would be alone."""

from __future__ import annotations

import logging
import random

import pytest
from river import base, evaluate, linear_model, metrics

from river_pa import cli
from river_pa.connectors.config import ServeConfig
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.models.challengers import Duel
from river_pa.connectors.observe.metrics import collect
from river_pa.connectors.replay import records
from river_pa.connectors.state import checkpoint
from river_pa.connectors.state.pending import entry_bytes
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import serve_until_learned

N, DELAY, STOP = 600, 25, 240
C01 = 'c01=PAClassifier{"C": 0.01}'
LR = "lr=river.linear_model:LogisticRegression"


class Flaky(base.Classifier):
    """A classifier that raises on events whose `a` is above 0.8 (about a fifth of them)."""

    def learn_one(self, x, y):
        if x["a"] > 0.8:
            raise RuntimeError("flaky learn")

    def predict_proba_one(self, x):
        if x["a"] > 0.8:
            raise RuntimeError("flaky predict")
        return {True: 0.5, False: 0.5}


def _rows() -> list[tuple[dict, bool]]:
    rng = random.Random(11)
    rows = []
    for _ in range(N):
        x = {"a": rng.random(), "b": rng.random()}
        rows.append((x, x["a"] + 0.2 * rng.random() > x["b"]))
    return rows


@pytest.fixture
def stream(fake_clients):
    fake_clients.topic("ev"), fake_clients.topic("lab")
    fake_clients.send_all(records(_rows(), DELAY, start_ms=0), "ev", "lab")
    return fake_clients


def _daemon(tmp_path, challengers: list[str], metric=("Accuracy",)) -> Daemon:
    cfg = ServeConfig(model="PAClassifier", events_topic="ev", labels_topic="lab",
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), checkpoint_every=60,
                      challenger=challengers, metric=list(metric))
    return Daemon(cfg, PAClassifier())


def _river(model, metric=metrics.Accuracy) -> float:
    return evaluate.progressive_val_score(_rows(), model, metric(), delay=DELAY).get()


def _duel(served, challenger) -> tuple[int, int]:
    """(better, worse): the labels where `challenger` was right and `served` wrong, and the
    reverse, each model predicting every event and learning its label DELAY events later."""
    rows, waiting, counts = _rows(), {}, [0, 0]
    for kind, rid, _, _ in records(rows, DELAY, start_ms=0):
        x, y = rows[int(rid[1:])]
        if kind == "event":
            waiting[rid] = (served.predict_one(x), challenger.predict_one(x))
            continue
        mine, theirs = (p == y for p in waiting.pop(rid)[::-1])
        counts[0] += mine and not theirs
        counts[1] += theirs and not mine
        served.learn_one(x, y)
        challenger.learn_one(x, y)
    return counts[0], counts[1]


def _same_model(a, b) -> bool:
    return [a.predict_proba_one(x) for x, _ in _rows()] == [b.predict_proba_one(x) for x, _ in
                                                             _rows()]


def test_each_challenger_is_rivers_progressive_validation_of_its_model(stream, tmp_path):
    daemon = serve_until_learned(_daemon(tmp_path, [C01, LR]), N)
    figures = daemon.figures()
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier())}
    challengers = figures["challengers"]
    better, worse = _duel(PAClassifier(), PAClassifier(C=0.01))
    assert challengers["c01"] == {
        "model": "PAClassifier", "metrics": {"Accuracy": _river(PAClassifier(C=0.01))},
        "rolling": challengers["c01"]["rolling"], "labelled": N, "learned": N, "errors": 0,
        "drift": daemon.challengers["c01"].stats.drift.snapshot(),
        "versus_served": {"window": N, "better": better, "worse": worse, "beats": False,
                          "p_value": daemon.challengers["c01"].duel.p_value()}}
    assert worse > better and challengers["c01"]["versus_served"]["p_value"] > 0.99
    assert challengers["lr"]["metrics"] == {"Accuracy": _river(linear_model.LogisticRegression())}
    assert challengers["c01"]["metrics"] != figures["metrics"]  # another model, other figures
    reference = PAClassifier(C=0.01)
    for x, y in _rows():
        reference.learn_one(x, y)
    assert _same_model(daemon.challengers["c01"].slot.model, reference)
    families = {f.name: f for f in collect(daemon)}
    series = {(s.labels["model"], s.labels["metric"]): s.value
              for s in families["river_pa_metric"].samples}
    assert series == {("PAClassifier", "Accuracy"): figures["metrics"]["Accuracy"],
                      ("c01", "Accuracy"): challengers["c01"]["metrics"]["Accuracy"],
                      ("lr", "Accuracy"): challengers["lr"]["metrics"]["Accuracy"]}
    drifts = {s.labels["model"] for s in families["river_pa_drifts"].samples}
    assert drifts == {"PAClassifier", "c01", "lr"}
    assert {s.labels["model"]: s.value for s in families["river_pa_challenger_learned"].samples} \
        == {"c01": N, "lr": N}


def test_a_challenger_better_than_the_served_model_is_said_to_beat_it(stream, tmp_path,
                                                                      caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    cfg = ServeConfig(model="PAClassifier", model_params={"C": 0.01}, events_topic="ev",
                      labels_topic="lab", predictions_topic="preds", metrics_topic=None,
                      report_path=None, checkpoint_path=str(tmp_path / "ckpt"),
                      challenger=["c1=PAClassifier"], challenger_min_labels=100,
                      rolling_window=300)
    daemon = serve_until_learned(Daemon(cfg, PAClassifier(C=0.01)), N)
    duel = daemon.figures()["challengers"]["c1"]["versus_served"]
    assert duel["beats"] and duel["window"] == 300 and duel["p_value"] <= 0.01
    assert duel["better"] > 2 * duel["worse"]
    [line] = [r.getMessage() for r in caplog.records if "beats the served model" in r.getMessage()]
    assert line.startswith("challenger c1 beats the served model on the last ")
    assert line.endswith("level 0.01): promote it with `river-pa models promote c1` (or "
                         "--auto-promote)")
    families = {f.name: f for f in collect(daemon)}
    assert [(s.labels, s.value) for s in families["river_pa_challenger_beats"].samples] == [
        ({"model": "c1"}, 1.0)]


def test_a_restored_learner_continues_them_and_another_set_keeps_adds_and_drops(
        stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    first = serve_until_learned(_daemon(tmp_path, [C01, LR]), STOP)
    at_checkpoint = first.stats.counts["learned"]  # the final checkpoint holds them all
    changed = 'lr=PAClassifier{"variant": "PA-II"}'
    restored = serve_until_learned(_daemon(tmp_path, [C01, "c1=PAClassifier", changed]), N)
    kept, new, replaced = (restored.challengers[n] for n in ("c01", "c1", "lr"))
    assert kept.stats.counts["learned"] == N and kept.stats.metric[0].get() == \
        _river(PAClassifier(C=0.01))
    assert new.stats.counts["learned"] == replaced.stats.counts["learned"] == N - at_checkpoint
    reference = PAClassifier()
    for x, y in _rows()[at_checkpoint:]:  # labels are learned in event order here
        reference.learn_one(x, y)
    assert _same_model(new.slot.model, reference)
    assert "challenger c1 starts from nothing: new to this state" in caplog.text
    assert "challenger lr starts from nothing: its model or parameters changed" in caplog.text
    assert "dropped" not in caplog.text  # lr was replaced, not dropped
    caplog.clear()
    again = _daemon(tmp_path, [C01])
    again.consumer = None  # not asked without --exactly-once
    again.load()
    assert list(again.challengers) == ["c01"] and again.challengers["c01"].stats.counts[
        "learned"] == N
    assert "challenger c1 of the restored state dropped: not named by --challenger" in caplog.text
    assert "challenger lr of the restored state dropped" in caplog.text


def test_a_challenger_that_raises_is_counted_and_changes_nothing_else(stream, tmp_path, caplog):
    flaky = f"flaky={__name__}:Flaky"
    daemon = serve_until_learned(_daemon(tmp_path, [flaky]), N)
    figures = daemon.figures()
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier())}
    assert figures["dead_lettered"] == 0 and figures["learned"] == N
    high = sum(x["a"] > 0.8 for x, _ in _rows())
    flaky = figures["challengers"]["flaky"]
    assert flaky["errors"] == 2 * high  # predicting and learning each of them
    assert flaky["learned"] == N - high and flaky["labelled"] == N
    assert "challenger flaky failed predicting (1 so far; the record goes on): RuntimeError: " \
           "flaky predict" in caplog.text


def test_the_pending_store_counts_the_challengers_predictions():
    alone = entry_bytes("e1", {"a": 1.0}, True)
    assert entry_bytes("e1", {"a": 1.0}, True, {"c01": True, "lr": {True: 0.4, False: 0.6}}) \
        > alone + 2 * 50


@pytest.mark.parametrize("value,line", [
    ("PAClassifier", "challenger 'PAClassifier' must be NAME=MODEL or NAME=MODEL{JSON "
                     "parameters}, NAME of 1-64 of a-z A-Z 0-9 _ . -"),
    ("PAClassifier=PARegressor", "challenger PAClassifier: the name is the served model"),
    ("c=PAClassifier{C: 1}", "challenger c: parameters '{C: 1}' are not a JSON object"),
    ("c=NoSuchModel", "challenger c: model 'NoSuchModel': unknown model; choose one of "),
    ('c=PAClassifier{"c": 1}', "challenger c: unknown parameter 'c' for PAClassifier"),
    ("r=PARegressor", "challenger r: a regressor cannot challenge the served model, a "
                      "classifier"),
    ("ml=PAMultiLabelClassifier", "challenger ml: metric Accuracy does not work with "
                                  "PAMultiLabelClassifier"),
    ('b=PAClassifier{"C": 1}', "challenger b: the same model and parameters as challenger a"),
])
def test_a_bad_challenger_is_status_2_naming_it(capsys, value, line):
    argv = ["serve", "--challenger", "a=PAClassifier", "--challenger", value,
            "--bootstrap-servers", "127.0.0.1:1"]
    assert cli.main(argv) == 2
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(f"river-pa serve: {line}"), err


def test_a_minimum_the_window_cannot_hold_is_refused(capsys):
    argv = ["serve", "--challenger", "a=PAClassifier", "--challenger-min-labels", "2000",
            "--bootstrap-servers", "127.0.0.1:1"]
    assert cli.main(argv) == 2
    assert "challenger_min_labels=2000 is above rolling_window=1000" in capsys.readouterr().err


def test_beats_turns_false_only_when_p_is_ten_times_the_level():
    duel = Duel(window=1000, alpha=0.01, min_labels=1)
    changes = [duel.update(True, False, True) for _ in range(12)]  # p = 2**-n
    assert changes.count(True) == 1 and duel.beats
    for _ in range(3):  # p between 0.01 and 0.1: still beats (was: flapping at every label)
        assert duel.update(True, True, False) is None
    assert 0.01 < duel.p_value() <= 0.1 and duel.beats
    changes = [duel.update(True, True, False) for _ in range(3)]  # p 0.038, 0.072, 0.119
    assert changes == [None, None, False] and duel.p_value() > 0.1 and not duel.beats


def test_a_name_given_twice_is_refused(capsys):
    argv = ["serve", "--challenger", "a=PAClassifier", "--challenger", "a=PARegressor",
            "--bootstrap-servers", "127.0.0.1:1"]
    assert cli.main(argv) == 2
    assert "challenger a: the name is given twice" in capsys.readouterr().err


def _promoting(tmp_path, params: dict, challengers: list[str]) -> Daemon:
    cfg = ServeConfig(model="PAClassifier", model_params=params, events_topic="ev",
                      labels_topic="lab", predictions_topic="preds", metrics_topic=None,
                      report_path=None, checkpoint_path=str(tmp_path / "ckpt"),
                      checkpoint_every=60, challenger=challengers)
    return Daemon(cfg, PAClassifier(**params))


def test_a_learner_started_with_a_challengers_model_promotes_it(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    first = serve_until_learned(_daemon(tmp_path, [C01]), STOP)
    assert len(first.pending)  # events whose label comes after the promotion
    # the next start serves c01's model and keeps the former one as challenger "old"
    # {"C": 1} is PAClassifier()'s C=1.0: the same parameters, written otherwise
    promoting = _promoting(tmp_path, {"C": 0.01}, ['old=PAClassifier{"C": 1}'])
    promoted = serve_until_learned(promoting, N)
    assert "challenger c01 promoted: it is the served model from now on" in caplog.text
    assert "challenger old continues the former served model of the restored state" in caplog.text
    figures = promoted.figures()
    # both continue exactly: as if each had been learned alone over the whole stream
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier(C=0.01))}
    assert figures["challengers"]["old"]["metrics"] == {"Accuracy": _river(PAClassifier())}
    assert (figures["events"], figures["learned"], figures["labelled"]) == (N, N, N)
    old = figures["challengers"]["old"]
    assert (old["labelled"], old["learned"]) == (N, N)  # the former model learned them all
    for model, reference in ((promoted.slot.model, PAClassifier(C=0.01)),
                             (promoted.challengers["old"].slot.model, PAClassifier())):
        for x, y in _rows():
            reference.learn_one(x, y)
        assert _same_model(model, reference)


def test_a_promotion_without_the_former_model_drops_it_and_another_model_is_refused(
        stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    serve_until_learned(_daemon(tmp_path, [C01]), STOP)
    refused = _promoting(tmp_path, {"C": 0.5}, [])  # neither the model nor a challenger's
    refused.consumer = None
    with pytest.raises(checkpoint.VersionMismatch, match="or those of one of its challengers"):
        refused.load()
    promoted = _promoting(tmp_path, {"C": 0.01}, [])
    promoted.consumer = None  # not asked without --exactly-once
    promoted.load()  # (the refused one raised before it asked)
    assert not promoted.challengers and isinstance(promoted.slot.model, PAClassifier)
    assert promoted.slot.model.C == 0.01
    assert "challenger the former served model of the restored state dropped" in caplog.text


def test_a_state_written_before_challengers_and_drift_is_restored_and_goes_on(stream, tmp_path,
                                                                             caplog):
    # what an older release pickled: no drift watch in the stats, no challengers' predictions
    # in the pending entries, no challengers in the state
    caplog.set_level(logging.INFO, "river_pa.serve")
    old = serve_until_learned(_daemon(tmp_path, []), STOP)
    state = old._state()
    del state["challengers"], state["stats"].__dict__["drift"]
    for entry in state["pending"].entries():
        del entry.__dict__["others"]
    checkpoint.save(tmp_path / "ckpt", state, old.slot.model, state["offsets"], None)
    new = serve_until_learned(_daemon(tmp_path, [C01]), N)
    figures = new.figures()
    assert figures["metrics"] == {"Accuracy": _river(PAClassifier())}  # nothing skipped
    assert (figures["learned"], figures["challengers"]["c01"]["learned"]) == (
        N, N - state["stats"].counts["learned"])
    assert figures["drift"]["detector"] == "ADWIN"
    assert "challenger c01 starts from nothing: new to this state" in caplog.text
    assert "drift watch starts afresh with --drift-detector ADWIN {}" in caplog.text


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3])
def test_the_rejection_bound_is_scipys_exact_binomial_test(alpha):
    from scipy.stats import binomtest

    from river_pa.connectors.models.challengers import critical

    for n in range(1, 200):
        k = critical(n, alpha)
        assert k > n or binomtest(k, n, 0.5, alternative="greater").pvalue <= alpha
        assert binomtest(k - 1, n, 0.5, alternative="greater").pvalue > alpha
