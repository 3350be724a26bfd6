"""Each model's own versions in the model topic (models/publishing.py, models/pinning.py), on
the in-memory topics of fake_kafka.py: a learner publishes each challenger as `model@NAME`
beside the served `model`, one numbering over both, the newest --keep-versions of each kept
across terms; a pin of a challenger's version serves it; a removed challenger's snapshots are
tombstoned."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.models import control
from river_pa.connectors.roles.learner import Learner
from river_pa.connectors.state import checkpoint, snapshots
from river_pa.connectors.state.recovery import FORMER
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import FakeConsumer, TP, serve_until_learned
from tests.connectors.test_challengers import N, _rows, _same_model
from tests.connectors.test_control import _serve_until, _write_at
from tests.connectors.test_control import stream as control_stream  # noqa: F401 (a fixture)

KEEP = 3


@pytest.fixture
def stream(control_stream, monkeypatch):  # noqa: F811 (test_control.py's, its topics made here)
    from river_pa.connectors.state import recovery

    for topic in ("mt", "st"):
        control_stream.topic(topic)
    monkeypatch.setattr(recovery, "ensure_topic", lambda cfg, topic: None)
    return control_stream


def _learner(tmp_path, **settings) -> Learner:
    cfg = ServeConfig(**{
        "model": "PAClassifier", "model_params": {"C": 0.01}, "role": "learn",
        "events_topic": "ev", "labels_topic": "lab", "metrics_topic": None, "report_path": None,
        "checkpoint_path": str(tmp_path / "ckpt"), "checkpoint_every": 60,
        "challenger": ["c1=PAClassifier"], "control_topic": "ctl", "model_topic": "mt",
        "state_topic": "st", "publish_every": 100, "publish_seconds": 1e9,
        "keep_versions": KEEP, "max_poll_records": 20, **settings})
    learner = Learner(cfg, PAClassifier(C=0.01))
    learner.lease = SimpleNamespace(confirm=lambda: True)  # held for ever
    return learner


def _live_keys(cluster, topic: str) -> set[bytes]:
    """The keys of `topic` compaction keeps (the newest record of each is not a tombstone)."""
    newest = {r.key: r.value for r in cluster.logs[TP(topic, 0)]}
    return {k for k, v in newest.items() if v is not None}


def _versions(cluster, snapshot: str) -> list[tuple[int, dict]]:
    """(version, state) of each version of `snapshot` in the model topic, oldest first."""
    reader = snapshots.Reader(FakeConsumer(cluster), "mt", snapshot, lambda reason: None)
    reader.read_to_end(5)
    found = []
    for manifest, payload in reader.candidates():
        _, state = checkpoint.loads(payload, None, None, snapshot,
                                    dict(zip(("term", "version"), snapshots.stamp(manifest))))
        found.append((manifest["version"], state))
    return found[::-1]


def _first(k: int, model) -> PAClassifier:
    for x, y in _rows()[:k]:
        model.learn_one(x, y)
    return model


def test_each_challenger_has_its_own_versions_numbered_with_the_served_models(stream, tmp_path):
    learner = serve_until_learned(_learner(tmp_path), N)
    served, own = _versions(stream, "model"), _versions(stream, "model@c1")
    assert len(served) == len(own) == KEEP  # the older ones of each are tombstoned
    assert not {v for v, _ in served} & {v for v, _ in own}  # a version names one model
    for version, state in own:  # the challenger as it was when published
        assert state["name"] == "c1" and 0 < state["learned"] <= N
        assert _same_model(state["model"], _first(state["learned"], PAClassifier()))
    assert [s["name"] for _, s in served] == ["PAClassifier"] * KEEP
    assert learner.model_version == max(v for v, _ in served + own)


def test_a_new_term_numbers_above_and_keeps_only_the_newest_of_each(stream, tmp_path):
    serve_until_learned(_learner(tmp_path), N // 2)
    first = _versions(stream, "model@c1")
    serve_until_learned(_learner(tmp_path), N)  # term 2 restores the state, learns the rest
    again = _versions(stream, "model@c1")
    assert len(again) == KEEP and min(v for v, _ in again) > max(v for v, _ in first)
    prefixes = {k.rsplit(b"/", 1)[0] for k in _live_keys(stream, "mt") if k.count(b"/") == 2}
    assert prefixes == {b"model/2", b"model@c1/2"}  # term 1's versions are tombstoned


def test_a_pinned_challenger_version_is_what_the_model_topic_serves(stream, tmp_path):
    serve_until_learned(_learner(tmp_path), N // 2)
    (version, state), *_ = _versions(stream, "model@c1")  # its oldest kept
    _, value, headers = control.encode("pin", "c1", None, "ctl", version=version)
    learner = serve_until_learned(_write_at(_learner(tmp_path), N // 2 + 60,
                                            (value, headers)), N)
    assert learner.control["pinned"] == {"name": "c1", "version": version}
    newest = _versions(stream, "model")[-1][1]
    assert (newest["name"], newest["pinned"], newest["learned"]) == ("c1", version,
                                                                     state["learned"])
    assert _same_model(newest["model"], _first(state["learned"], PAClassifier()))
    assert set(newest["challengers"]) == {"PAClassifier", "c1"}  # any model's predictor loads it
    # stopped while pinned, the learner published no live model over the pin (it did)
    assert [s.get("pinned") for _, s in _versions(stream, "model")][-1] == version


@pytest.mark.parametrize("version_of", ["model", "model@c1"])
def test_a_pin_of_a_version_the_model_does_not_have_changes_nothing(stream, tmp_path,
                                                                    version_of):
    serve_until_learned(_learner(tmp_path), N // 2)
    version = _versions(stream, version_of)[-1][0]
    name = "c9" if version_of == "model@c1" else "c1"  # c1's versions are not c9's either
    _, value, headers = control.encode("pin", name, None, "ctl", version=version)
    learner = serve_until_learned(_write_at(_learner(tmp_path), N // 2 + 60,
                                            (value, headers)), N)
    assert learner.control["pinned"] is None
    assert learner.control_recent["0"].startswith("not pinned: ")


def test_a_removed_challengers_snapshots_are_tombstoned(stream, tmp_path):
    _, value, headers = control.encode("remove", "c1", None, "ctl")
    learner = serve_until_learned(_write_at(_learner(tmp_path), N // 2, (value, headers)), N)
    assert learner.challengers == {}
    keys = _live_keys(stream, "mt")
    assert keys and not [k for k in keys if k.startswith(b"model@c1")]
    assert len(_versions(stream, "model")) == KEEP


def test_a_challenger_a_restart_drops_has_its_snapshots_tombstoned(stream, tmp_path):
    serve_until_learned(_learner(tmp_path), N // 2)
    assert _versions(stream, "model@c1")
    learner = serve_until_learned(_learner(tmp_path, challenger=["c2=PAClassifier"]), N)
    assert list(learner.challengers) == ["c2"]
    keys = _live_keys(stream, "mt")
    assert not [k for k in keys if k.startswith(b"model@c1")]
    assert [s["name"] for _, s in _versions(stream, "model@c2")] == ["c2"] * KEEP


def test_a_learner_killed_between_the_served_and_a_challengers_snapshot_sends_it_again(
        stream, tmp_path):
    serve_until_learned(_learner(tmp_path), N)
    (version, state), = _versions(stream, "model@c1")[-1:]
    assert state["learned"] == N
    stream.append("mt", None, f"model@c1/1/{version}".encode())  # as if never sent
    assert _versions(stream, "model@c1")[-1][1]["learned"] < N
    serve_until_learned(_learner(tmp_path), N)  # nothing left to learn
    assert _versions(stream, "model@c1")[-1][1]["learned"] == N


def test_a_rollback_returns_the_writers_to_what_the_last_checkpoint_committed(stream, tmp_path):
    # exactly-once: a removal's tombstones aborted with their transaction, then obeyed again
    # after the rollback, tombstoned nothing (the writer kept no version any more)
    learner = serve_until_learned(_learner(tmp_path), N)
    kept = list(learner.model_publishers["c1"].kept)
    assert len(kept) == KEEP
    learner._publish_committed()
    learner._drop_snapshots("c1")  # sent in the transaction the rollback aborts
    learner._model_publisher("c9")  # a writer made since
    assert learner.model_publishers["c1"].kept == []
    learner._publish_rolled_back()
    assert learner.model_publishers["c1"].kept == kept and "c9" not in learner.model_publishers


def test_a_new_term_with_nothing_new_publishes_nothing_and_an_added_model_is_published(
        stream, tmp_path):
    serve_until_learned(_learner(tmp_path), N)
    def numbers():
        return [v for name in ("model", "model@c1") for v, _ in _versions(stream, name)]

    before = numbers()
    serve_until_learned(_learner(tmp_path), N)  # nothing left to learn
    assert numbers() == before
    # a challenger that learns while the served model learns nothing (it learns the history:
    # --backfill): published all the same once it joined
    _, value, headers = control.encode("add", "x1", None, "ctl", spec='PAClassifier{"C": 0.2}',
                                       backfill=True)
    learner = _serve_until(_write_at(_learner(tmp_path), N, (value, headers)),
                           lambda daemon: "x1" in daemon.challengers)
    assert list(learner.challengers) == ["c1", "x1"]
    [(_, added)] = _versions(stream, "model@x1")
    assert (added["name"], added["learned"]) == ("x1", N)
    assert _same_model(added["model"], _first(N, PAClassifier(C=0.2)))
    assert numbers() == before  # the others had nothing new


def test_a_challenger_that_learned_nothing_yet_has_no_version(stream, tmp_path):
    serve_until_learned(_learner(tmp_path), N)
    _, value, headers = control.encode("add", "x1", None, "ctl", spec='PAClassifier{"C": 0.2}')
    _serve_until(_write_at(_learner(tmp_path), N, (value, headers)),
                 lambda daemon: "x1" in daemon.challengers)
    assert _versions(stream, "model@x1") == []


def test_a_restart_after_a_promotion_publishes_only_the_demoted_model(stream, tmp_path):
    # helper-36: a promotion published every challenger again, though none learned since
    _, value, headers = control.encode("add", "x1", None, "ctl", spec='PAClassifier{"C": 0.2}')
    serve_until_learned(_write_at(_learner(tmp_path), N // 2, (value, headers)), N)
    before = {n: [v for v, _ in _versions(stream, f"model@{n}")] for n in ("c1", "x1")}
    _, value, headers = control.encode("promote", "c1", None, "ctl")
    learner = _serve_until(_write_at(_learner(tmp_path), N, (value, headers)),
                           lambda daemon: daemon.slot.name == "c1")
    assert sorted(learner.challengers) == sorted(["x1", FORMER])
    assert {n: [v for v, _ in _versions(stream, f"model@{n}")] for n in ("c1", "x1")} == before
    [(_, demoted)] = _versions(stream, f"model@{FORMER}")
    assert demoted["learned"] == N


def test_a_restart_after_an_unpin_publishes_nothing_again(stream, tmp_path):
    # helper-35: the unpin published the served model alone (the challenger had not learned
    # since its last), and every restart after it published every model again
    serve_until_learned(_learner(tmp_path), N)
    version = _versions(stream, "model")[0][0]
    records = [control.encode(command, "PAClassifier", None, "ctl", at, version)[1:]
               for at, command in enumerate(("pin", "unpin"))]  # at offsets 0 and 1
    _serve_until(_write_at(_learner(tmp_path), N, *records),
                 lambda daemon: (daemon.control_recent or {}).get("1") == "unpinned")
    before = [v for name in ("model", "model@c1") for v, _ in _versions(stream, name)]
    serve_until_learned(_learner(tmp_path), N)
    assert [v for name in ("model", "model@c1") for v, _ in _versions(stream, name)] == before


def test_a_challenger_whose_version_is_pinned_is_not_removed(stream, tmp_path):
    # helper-35: removed, it went on serving through the pin, and `models list` named it
    serve_until_learned(_learner(tmp_path), N // 2)
    version = _versions(stream, "model@c1")[-1][0]
    records = [control.encode(command, "c1", None, "ctl", at, version)[1:]
               for at, command in enumerate(("pin", "remove"))]
    learner = _serve_until(_write_at(_learner(tmp_path), N // 2, *records),
                           lambda daemon: "1" in (daemon.control_recent or {}))
    assert learner.control_recent["1"] == ("not removed: a version of it is pinned "
                                           "(`river-pa models unpin` first)")
    assert list(learner.challengers) == ["c1"] and _versions(stream, "model@c1")
