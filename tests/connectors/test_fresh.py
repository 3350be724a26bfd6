"""`--on-drift challenger` (models/fresh.py) in the daemon's loop, on the in-memory topics of
fake_kafka.py: a drift of the served model starts a fresh copy of it that learns from the
label that showed the drift, `--auto-promote` promotes it once it is better, a later drift
replaces what an earlier one made, and a restored learner continues all of it exactly."""

from __future__ import annotations

import logging
import random

import pytest

from river_pa import cli
from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka import admin
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.models import control
from river_pa.connectors.replay import records
from river_pa.connectors.state.recovery import FORMER
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import serve_until_learned
from tests.connectors.test_drift import _rises

FLIPS, N, DELAY = (600, 1400), 2000, 20


def _rows() -> list[tuple[dict, bool]]:
    """N events of two features; the label is negated from FLIPS[0] and back from FLIPS[1]."""
    rng = random.Random(5)
    rows = []
    for i in range(N):
        x = {"a": rng.random(), "b": rng.random()}
        rows.append((x, (x["a"] > x["b"]) != (FLIPS[0] <= i < FLIPS[1])))
    return rows


@pytest.fixture
def stream(fake_clients):
    fake_clients.topic("ev"), fake_clients.topic("lab")
    fake_clients.send_all(records(_rows(), DELAY, start_ms=0), "ev", "lab")
    return fake_clients


def _daemon(tmp_path, **settings) -> Daemon:
    tmp_path.mkdir(exist_ok=True)
    cfg = ServeConfig(**{
        "model": "PAClassifier", "model_params": {"C": 0.01}, "events_topic": "ev",
        "labels_topic": "lab",
        "predictions_topic": "preds", "metrics_topic": None, "report_path": None,
        "checkpoint_path": str(tmp_path / "ckpt"), "checkpoint_every": 100,
        "on_drift": "challenger", "auto_promote": True, "auto_promote_cooldown": 200,
        "challenger_min_labels": 100,
        **settings})
    return Daemon(cfg, PAClassifier(C=0.01))


def _learned(rows) -> PAClassifier:
    model = PAClassifier(C=0.01)
    for x, y in rows:
        model.learn_one(x, y)
    return model


def _same(model, other) -> bool:
    return all(model.predict_proba_one(x) == other.predict_proba_one(x) for x, _ in _rows())


def test_a_drift_starts_a_fresh_copy_that_learns_from_the_drift_on(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = serve_until_learned(_daemon(tmp_path, auto_promote=False), FLIPS[0] + 400)
    first, last = _rises(caplog)[0], daemon.stats.counts["labelled"]
    assert FLIPS[0] < first < FLIPS[0] + 100 and last < FLIPS[1]
    assert f"challenger fresh-{first} starts afresh beside it (--on-drift challenger)" \
        in caplog.text
    fresh = daemon.challengers[f"fresh-{first}"]  # the label that showed the drift is its first
    assert _same(fresh.slot.model, _learned(_rows()[first - 1:last]))
    assert fresh.stats.counts["learned"] == last - first + 1
    assert daemon.control["made"] == [f"fresh-{first}"]
    # the copy of the first concept's model is better on the second concept
    assert fresh.duel.beats and fresh.duel.better > 3 * fresh.duel.worse


def test_auto_promote_serves_the_fresh_copy_and_the_next_drift_replaces_what_it_made(
        stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = serve_until_learned(_daemon(tmp_path), N)
    rises = _rises(caplog)
    first, second = rises[0], next(r for r in rises if r > FLIPS[1])
    promotions = [r.getMessage() for r in caplog.records if " promoted by --auto-promote" in
                  r.getMessage()]
    assert promotions[0].startswith(f"fresh-{first} promoted by --auto-promote")
    # the fresh copy of the second drift serves now, it learned from that drift on; the first
    # copy, then the model it replaced, were dropped: one made challenger at a time
    assert promotions[-1].startswith(f"fresh-{second} promoted")
    assert daemon.slot.name == "PAClassifier"  # the same model and parameters as --model
    assert _same(daemon.slot.model, _learned(_rows()[second - 1:]))
    assert list(daemon.challengers) == [FORMER] and daemon.control["made"] == [FORMER]
    assert f"challenger {FORMER} dropped: made by an earlier drift" in caplog.text
    # the first drift's copy, demoted by the second's, learns on as a challenger
    assert _same(daemon.challengers[FORMER].slot.model, _learned(_rows()[first - 1:]))


@pytest.mark.parametrize("stop_at", [FLIPS[0] + 80, FLIPS[0] + 400, FLIPS[1] + 300])
def test_a_restored_learner_continues_the_made_challengers_exactly(stream, tmp_path, stop_at):
    whole = serve_until_learned(_daemon(tmp_path / "whole"), N)
    stream.committed.clear()  # the fake cluster's one group starts again
    stopped = serve_until_learned(_daemon(tmp_path), stop_at)
    assert stopped.control["made"]  # stopped with a fresh copy or a model it demoted
    restored = serve_until_learned(_daemon(tmp_path), N)
    assert restored.slot.name == whole.slot.name
    assert _same(restored.slot.model, whole.slot.model)
    assert restored.control == whole.control
    assert list(restored.challengers) == list(whole.challengers)
    for name, challenger in whole.challengers.items():
        assert _same(restored.challengers[name].slot.model, challenger.slot.model)
        assert restored.challengers[name].stats.counts == challenger.stats.counts


def test_each_model_can_have_its_own_reaction(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    daemon = serve_until_learned(_daemon(
        tmp_path, auto_promote=False, challenger=['c05=PAClassifier{"C": 0.5}'],
        on_drift="challenger,c05=reset"), FLIPS[0] + 400)
    assert "(ADWIN, model c05, label" in caplog.text
    assert "the model starts afresh (--on-drift reset)" in caplog.text
    [made] = daemon.control["made"]
    assert list(daemon.challengers) == ["c05", made] and made.startswith("fresh-")
    # a challenger's drift under `challenger`: logged, no copy of a challenger
    caplog.clear()
    stream.committed.clear()  # the fake cluster's one group starts again
    daemon = serve_until_learned(_daemon(
        tmp_path / "2", auto_promote=False, challenger=['c05=PAClassifier{"C": 0.5}'],
        on_drift="log,c05=challenger"), FLIPS[0] + 400)
    assert "(--on-drift challenger answers drifts of the served model)" in caplog.text
    assert list(daemon.challengers) == ["c05"]


def test_a_name_a_model_has_is_not_taken(stream, tmp_path):
    daemon = _daemon(tmp_path, auto_promote=False, challenger=["fresh-672=PAClassifier"])
    serve_until_learned(daemon, FLIPS[0] + 200)
    assert daemon.control["made"] == ["fresh-672.2"]  # the drift is seen at label 672
    assert list(daemon.challengers) == ["fresh-672", "fresh-672.2"]


def _promoting(daemon: Daemon, stop: bool = False) -> list[str]:
    """Once a drift made a copy: `models promote c1`, then `models promote fresh-L` (and stop
    there with `stop`); the names promoted."""
    step, promoted = daemon._step, []

    def step_then_promote():
        step()
        if daemon.control["made"] and len(promoted) < 2:
            name = "c1" if not promoted else daemon.control["made"][0]
            daemon._promote_live(name, "the test")
            promoted.append(name)
            daemon.stopping = stop and len(promoted) == 2

    daemon._step = step_then_promote
    return promoted


def test_a_challenger_promoted_between_a_drift_and_its_copy_is_not_made(stream, tmp_path,
                                                                         caplog):
    # helper-34: a --challenger promoted in between, demoted by the copy, was dropped at the
    # next drift as if it had drifted, and for good (a restart said `models remove` did it);
    # the model that drifted, demoted by it, was dropped by a restart
    caplog.set_level(logging.INFO, "river_pa.serve")
    settings = {"auto_promote": False, "challenger": ["c1=PAClassifier"]}
    whole = _daemon(tmp_path / "whole", **settings)
    promoted = _promoting(whole)
    serve_until_learned(whole, N)
    assert promoted[1].startswith("fresh-") and len(_rises(caplog)) >= 2  # a later drift too
    assert "c1" in whole.challengers and "c1" not in whole.control["made"]
    assert "challenger c1 dropped" not in caplog.text
    assert f"challenger {FORMER} dropped: made by an earlier drift" in caplog.text
    stream.committed.clear()  # the fake cluster's one group starts again
    stopped = _daemon(tmp_path, **settings)
    _promoting(stopped, stop=True)
    assert stopped.run() == 0 and stopped.control["made"] == [FORMER]
    restored = serve_until_learned(_daemon(tmp_path, **settings), N)
    assert restored.control == whole.control
    assert list(restored.challengers) == list(whole.challengers)
    for name, challenger in whole.challengers.items():
        assert _same(restored.challengers[name].slot.model, challenger.slot.model)


def test_a_made_name_a_restart_gives_other_parameters_is_theirs(stream, tmp_path, caplog):
    caplog.set_level(logging.INFO, "river_pa.serve")
    first = serve_until_learned(_daemon(tmp_path, auto_promote=False), FLIPS[0] + 200)
    [made] = first.control["made"]
    again = serve_until_learned(_daemon(tmp_path, auto_promote=False,
                                        challenger=[f"{made}=PAClassifier"]), N)
    assert made in again.challengers and made not in again.control["made"]
    assert f"challenger {made} dropped" not in caplog.text
    assert again.challengers[made].slot.model.C == 1.0


def test_a_made_challenger_can_be_removed_and_stays_removed(stream, tmp_path, monkeypatch):
    monkeypatch.setattr(admin, "ensure_topic", lambda cfg, topic: None)
    stream.topic("ctl")
    daemon, removed = _daemon(tmp_path, auto_promote=False, control_topic="ctl"), []
    step = daemon._step

    def step_then_remove():  # `river-pa models remove fresh-L` once there is one
        step()
        if daemon.control["made"] and not removed:
            removed.append(daemon.control["made"][0])
            _, value, headers = control.encode("remove", removed[0], None, "ctl")
            stream.append("ctl", value, b"remove", headers=headers)

    daemon._step = step_then_remove
    serve_until_learned(daemon, FLIPS[0] + 300)
    assert daemon.control_recent == {"0": "removed"}
    assert removed[0] not in daemon.challengers and daemon.control["made"] == []
    restored = serve_until_learned(_daemon(tmp_path, auto_promote=False, control_topic="ctl"),
                                   FLIPS[0] + 350)
    assert removed[0] not in restored.challengers and restored.control["made"] == []


@pytest.mark.parametrize("argv,line", [
    (["--on-drift", "challenger", "--drift-detector", "none"],
     "river-pa serve: on_drift=challenger needs a drift detector, and drift_detector is none"),
    (["--on-drift", "log,c1=reset", "--drift-detector", "none"],
     "river-pa serve: on_drift=log,c1=reset needs a drift detector"),
    (["--on-drift", "c1=restart"], "river-pa serve: argument --on-drift: 'c1=restart': "
     "'restart' is not log, reset or challenger"),
    (["--auto-promote"], "river-pa serve: auto_promote needs a challenger to promote "
     "(--challenger, or --on-drift challenger)"),
    (["--on-drift", "challenger", "--challenger-min-labels", "600", "--rolling-window", "500"],
     "river-pa serve: challenger_min_labels=600 is above rolling_window=500"),
])
def test_a_reaction_that_cannot_work_is_refused_before_any_io(capsys, argv, line):
    assert cli.main(["serve", *argv, "--bootstrap-servers", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after argparse's usage
    assert err.startswith(line), err


def test_a_reaction_of_a_model_the_start_has_not_is_a_warning(caplog):
    # helper-34: 10,000 names like c0=reset were taken without a word (a typo: c5 for c05)
    argv = ["serve", "--on-drift", "reset,c5=log,c05=log", "--challenger",
            'c05=PAClassifier{"C": 0.5}', "--bootstrap-servers", "127.0.0.1:1"]
    assert cli.main(argv) == 1  # no broker
    assert [r.getMessage() for r in caplog.records if "on_drift" in r.getMessage()] == [
        "on_drift gives a reaction to c5, which this start has no model of (served: "
        "PAClassifier; challengers: c05): it applies if a model of that name comes (models add, "
        "a promotion)"]


def test_a_cooldown_without_auto_promote_is_a_warning(caplog):
    argv = ["serve", "--challenger", "c05=PAClassifier", "--auto-promote-cooldown", "200",
            "--checkpoint-path", "/proc/no/checkpoint"]
    assert cli.main(argv) == 3  # said before the checkpoint is checked, without any I/O
    assert [r.getMessage() for r in caplog.records if "cooldown" in r.getMessage()] == [
        "auto_promote_cooldown=200 has no effect without auto_promote (--auto-promote): "
        "promotions are by `river-pa models promote` only"]
