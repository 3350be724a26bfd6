"""Checkpoints: atomic, versioned, HMAC-verified before anything is unpickled."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import resource
import subprocess
import sys

import pytest
from river import linear_model

from river_pa import PAClassifier
from river_pa.connectors.state import checkpoint


class Bomb:
    """Unpickling this object would run code: the loader must refuse before reaching it."""

    def __reduce__(self):
        return (pytest.fail, ("unpickled a checkpoint that should have been refused",))


@pytest.fixture
def model():
    m = linear_model.PAClassifier()
    m.learn_one({"a": 1.0}, True)
    return m


def test_round_trip_keeps_state_and_the_previous_file(tmp_path, model):
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, {"model": model, "n": 1}, model, {"t:0": 5}, b"key")
    checkpoint.save(path, {"model": model, "n": 2}, model, {"t:0": 9}, b"key")
    state = checkpoint.load(path, checkpoint.metadata(model), b"key")
    assert state["n"] == 2 and state["model"].predict_one({"a": 1.0}) is True
    assert checkpoint.read_header(path)["offsets"] == {"t:0": 9}
    assert checkpoint.read_header(str(path) + ".prev")["offsets"] == {"t:0": 5}
    assert not (tmp_path / "state.ckpt.tmp").exists()


def write_bomb(path, model, key, **header_changes):
    checkpoint.save(path, {"model": Bomb()}, model, {}, key)
    header, payload = path.read_bytes().split(b"\n", 1)
    header = {**json.loads(header), **header_changes}
    path.write_bytes(json.dumps(header).encode() + b"\n" + payload)


@pytest.mark.parametrize("field,value", [("river", "0.0.1"), ("python", "2.7.18"),
                                         ("river_pa", "9.9"), ("model_class", "x.Other")])
def test_other_versions_are_refused_before_unpickling(tmp_path, model, field, value):
    path = tmp_path / "state.ckpt"
    write_bomb(path, model, None, **{field: value})
    with pytest.raises(checkpoint.CheckpointError, match=field):
        checkpoint.load(path, checkpoint.metadata(model), None)


def test_another_configuration_of_the_class_is_refused(tmp_path):
    """A new user's learner restarted with another pipeline restored the old one silently (every
    pipeline is one class); another C is another model too."""
    from river import compose, preprocessing

    def pipeline(*keys):
        return compose.Select(*keys) | preprocessing.StandardScaler() | PAClassifier()

    for written, configured, differs in [
            (PAClassifier(), PAClassifier(C=0.5), '"C": 1.0'),
            (pipeline("a", "b"), pipeline("a"), '"_POSITIONAL_ARGS": ["a", "b"]'),
            (pipeline("a") | preprocessing.StandardScaler(), pipeline("a"), "StandardScaler1")]:
        path = tmp_path / "state.ckpt"
        write_bomb(path, written, None)
        with pytest.raises(checkpoint.VersionMismatch, match="model_config") as info:
            checkpoint.load(path, checkpoint.metadata(configured), None)
        assert differs in str(info.value)
    same = checkpoint.metadata(pipeline("b", "a", "c"))
    assert checkpoint.metadata(pipeline("c", "a", "b")) == same


def test_a_pipelines_configuration_is_the_same_in_every_process():
    # compose.Select keeps its keys in a set: their order follows PYTHONHASHSEED
    code = ("from river import compose; from river_pa import PAClassifier; from "
            "river_pa.connectors.state.checkpoint import model_config; print(model_config("
            "compose.Select(*'abcdefgh') | PAClassifier()))")
    configs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2", "3")}
    assert len(configs) == 1


def test_wrong_key_and_unsigned_files_are_refused(tmp_path, model):
    path = tmp_path / "state.ckpt"
    write_bomb(path, model, b"right key")
    with pytest.raises(checkpoint.CheckpointError, match="HMAC"):
        checkpoint.load(path, checkpoint.metadata(model), b"wrong key")
    write_bomb(path, model, None)
    with pytest.raises(checkpoint.CheckpointError, match="unsigned"):
        checkpoint.load(path, checkpoint.metadata(model), b"right key")


def test_tampered_payload_is_refused(tmp_path, model):
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, {"model": model}, model, {}, b"key")
    header, _ = path.read_bytes().split(b"\n", 1)
    path.write_bytes(header + b"\n" + pickle.dumps({"model": Bomb()}))
    with pytest.raises(checkpoint.CheckpointError, match="HMAC"):
        checkpoint.load(path, checkpoint.metadata(model), b"key")


@pytest.mark.parametrize("content", [b"\x8b\xbf\x00 random bytes\n", b"[1, 2]\n", b"42"])
def test_garbage_files_are_refused_not_tracebacks(tmp_path, model, content):
    path = tmp_path / "ck.bin"
    path.write_bytes(content)  # was UnicodeDecodeError / AttributeError out of the daemon
    with pytest.raises(checkpoint.CheckpointError, match="not a river-pa checkpoint"):
        checkpoint.load(path, checkpoint.metadata(model), None)


def test_a_directory_as_checkpoint_path_is_refused(tmp_path, model):
    with pytest.raises(checkpoint.CheckpointError, match="cannot read it"):
        checkpoint.load(tmp_path, checkpoint.metadata(model), None)


def test_an_unwritable_checkpoint_path_stops_the_daemon_before_it_consumes(capsys):
    # it used to emit a batch of predictions, die with a traceback at the first save, and do
    # the same again on every restart
    from river_pa.cli import main

    assert main(["serve", "--checkpoint-path", "/proc/river-pa-test/ck.bin",
                     "--bootstrap-servers", "127.0.0.1:1"]) == 3
    assert "cannot write a checkpoint there" in capsys.readouterr().err


def test_check_writable_creates_the_folder(tmp_path):
    checkpoint.check_writable(tmp_path / "a" / "b" / "ck.bin")
    assert (tmp_path / "a" / "b").is_dir() and not list((tmp_path / "a" / "b").iterdir())


def test_checkpoints_are_readable_by_their_owner_only(tmp_path, model):
    path = tmp_path / "state.ckpt"
    for _ in range(2):  # the first file, then one renamed over it (.prev keeps the old inode)
        checkpoint.save(path, {"model": model}, model, {}, None)
        assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "state.ckpt.prev").stat().st_mode & 0o777 == 0o600


def test_a_signed_checkpoint_is_never_loaded_without_the_key(tmp_path, model):
    # a run without --checkpoint-key loaded a signed checkpoint unchecked
    path = tmp_path / "state.ckpt"
    write_bomb(path, model, b"the key")
    with pytest.raises(checkpoint.CheckpointError, match="signed but no --checkpoint-key"):
        checkpoint.load(path, checkpoint.metadata(model), None)


@pytest.fixture
def file_size_limit():
    """Lower this process's RLIMIT_FSIZE (writes past it fail with EFBIG, as on a full disk;
    Python ignores SIGXFSZ) and restore it after the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    yield lambda n: resource.setrlimit(resource.RLIMIT_FSIZE, (n, hard))
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_full_disk_during_a_checkpoint_is_one_error_and_leaves_no_tmp(tmp_path, model,
                                                                        file_size_limit):
    # it was an OSError traceback with a stale .tmp left behind
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, {"model": model, "pad": b"x" * 10_000}, model, {"t:0": 1}, None)
    before = path.read_bytes()
    file_size_limit(5_000)
    with pytest.raises(checkpoint.CheckpointError, match="cannot write a checkpoint there"):
        checkpoint.save(path, {"model": model, "pad": b"y" * 10_000}, model, {"t:0": 2}, None)
    assert path.read_bytes() == before and not (tmp_path / "state.ckpt.tmp").exists()
    # and a restart stops at once (an empty probe file passed, then every prediction since
    # the last checkpoint was emitted again before the same failure)
    with pytest.raises(checkpoint.CheckpointError, match="cannot write a checkpoint there"):
        checkpoint.check_writable(path)
    assert not (tmp_path / "state.ckpt.tmp").exists()


def test_unusable_report_path_and_metric_are_one_line_errors(tmp_path, capsys):
    from river_pa.cli import main

    base = ["serve", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint-path", str(tmp_path / "ck")]
    assert main(base + ["--report-path", "/proc/river-pa-test/r.jsonl"]) == 1
    assert "cannot append to --report-path" in capsys.readouterr().err
    assert main(base + ["--report-path", str(tmp_path / "r.jsonl"), "--metric",
                        "NoSuchMetric"]) == 2  # was 1 with a traceback
    assert "unknown metric 'NoSuchMetric'" in capsys.readouterr().err


# ---- the restricted unpickler: no checkpoint or snapshot runs code, with or without a key ----

def _fill(model):
    """`model` after learning a few events of the data River's checks give it (none for the
    sequence tagger), so its arrays, vocabularies and metrics are in its pickle."""
    import itertools

    from river import base, checks, datasets

    if isinstance(model, base.AnomalyDetector):
        data = datasets.Shuttle().take(100)
    elif isinstance(model, base.MultiLabelClassifier):
        data = [({"a": 1.0, "b": 0.5}, {"x": True, "y": False}),
                ({"a": -1.0, "c": 2.0}, {"x": False, "y": True})]
    else:
        data = next(iter(checks._yield_datasets(model)), ())
    for x, y in itertools.islice(data, 100):
        model.learn_one(x) if isinstance(model, base.AnomalyDetector) else model.learn_one(x, y)
    return model


def _models():
    from river import preprocessing

    from river_pa import PAClassifier
    from tests.test_estimators import _models as estimators

    yield from estimators()
    yield pytest.param(preprocessing.StandardScaler() | PAClassifier(),
                       id="StandardScaler|PAClassifier")


@pytest.mark.parametrize("model", list(_models()))
def test_every_estimator_and_a_pipeline_load_through_the_restricted_unpickler(model):
    model = _fill(model)
    data = checkpoint.dumps({"model": model}, model, {}, None)
    _, state = checkpoint.loads(data, checkpoint.metadata(model), None, "mem")
    # what the standard unpickler gives (a first round trip itself changes the bytes a little)
    unrestricted = pickle.loads(data.split(b"\n", 1)[1])
    assert pickle.dumps(state["model"]) == pickle.dumps(unrestricted["model"])


@pytest.mark.parametrize("model_name,metric", [("PAClassifier", ["Accuracy", "LogLoss"]),
                                               ("PARegressor", [])])
def test_the_daemons_state_loads_through_the_restricted_unpickler(model_name, metric):
    import river_pa
    from river_pa.connectors.config import ServeConfig
    from river_pa.connectors.loop.daemon import Daemon
    from river_pa.connectors.state.pending import Pending

    model = _fill(getattr(river_pa, model_name)())
    daemon = Daemon(ServeConfig(model=model_name, metric=metric, pending_ttl_ms=1000), model)
    daemon.slot.model = model
    y = {True: 0.4, False: 0.6} if model_name == "PAClassifier" else 0.5
    daemon.pending.add("e1", Pending({"a": 1.0}, y, 5, 100))
    daemon.stats.score(True if model_name == "PAClassifier" else 1.0, y, 10)
    daemon.stats.dead_letter("not_json")
    data = checkpoint.dumps(daemon._state(), model, {"t:0": 3}, None)
    _, state = checkpoint.loads(data, checkpoint.metadata(model), None, "mem")
    assert pickle.dumps(state) == pickle.dumps(pickle.loads(data.split(b"\n", 1)[1]))
    assert state["stats"].counts == daemon.stats.counts and len(state["pending"]) == 1


class Forged:
    """A pickle whose `__reduce__` calls `func(*args)`: what anyone who can write a topic or a
    file could send."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args

    def __call__(self, *args):  # so a Forged can be the function of another (a call chain)
        raise AssertionError("never called")


def _forgeries(marker):
    import functools
    import operator
    import os
    import subprocess

    import numpy as np

    touch = f"touch {marker}"
    return {
        "posix.system": Forged(os.system, touch),
        "builtins.exec": Forged(exec, f"open({str(marker)!r}, 'w')"),
        "builtins.eval": Forged(eval, f"open({str(marker)!r}, 'w')"),
        "subprocess.Popen": Forged(subprocess.Popen, ["touch", str(marker)]),
        "posix.system ": Forged(functools.partial, os.system, touch),  # partial of it
        "operator.attrgetter": Forged(operator.attrgetter, "system"),
        "builtins.getattr of 'tofile'": Forged(Forged(getattr, np.zeros(1), "tofile"), str(marker)),
        "builtins.getattr of '__class__'": Forged(getattr, linear_model.PAClassifier(), "__class__"),
    }


@pytest.mark.parametrize("refused", list(_forgeries("m")))
def test_a_forged_payload_runs_nothing_and_names_what_it_refused(tmp_path, model, refused):
    # with no key, a pickle in a checkpoint file (or a snapshot of the state or model topic:
    # the same format and loader) ran at once: os.system, exec, subprocess, getattr chains
    marker = tmp_path / "ran"
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, {"model": _forgeries(marker)[refused]}, model, {}, None)
    with pytest.raises(checkpoint.CheckpointError, match=f"refusing to unpickle {refused.strip()}"):
        checkpoint.load(path, checkpoint.metadata(model), None)
    assert not marker.exists()


@pytest.mark.parametrize("module,name", [("river_pa.connectors.state.pending", "sys.modules"),
                                         ("river.utils", "Rolling.__init__.__globals__"),
                                         ("river_pa", "PAClassifier"),  # a re-export
                                         ("river.datasets.base", "RemoteDataset"),
                                         ("river_pa.connectors.roles.learner", "Lease"),
                                         ("builtins", "bytearray")])
def test_globals_reached_by_another_name_or_outside_the_list_are_refused(model, module, name):
    def text(s):
        return b"\x8c" + bytes([len(s)]) + s.encode()

    payload = b"\x80\x04" + text(module) + text(name) + b"\x93."  # STACK_GLOBAL, STOP
    header = {**checkpoint.metadata(model), "offsets": {}, "sha256": hashlib.sha256(payload).hexdigest()}
    data = json.dumps(header).encode() + b"\n" + payload
    with pytest.raises(checkpoint.CheckpointError, match=f"refusing to unpickle {module}.{name}"):
        checkpoint.loads(data, checkpoint.metadata(model), None, "mem")


def test_the_configured_models_own_classes_are_trusted(model):
    from river_pa import multiclass

    custom = multiclass.PACostSensitiveClassifier(cost=_custom_cost)
    data = checkpoint.dumps({"model": custom}, custom, {}, None)
    meta = checkpoint.metadata(custom)
    with pytest.raises(checkpoint.CheckpointError, match="test_checkpoint._custom_cost"):
        checkpoint.loads(data, meta, None, "mem")
    checkpoint.trust(custom)  # the daemon trusts what its --model pickles to
    assert pickle.dumps(checkpoint.loads(data, meta, None, "mem")[1]["model"]) == pickle.dumps(custom)


def _custom_cost(y, r) -> float:
    return float(y != r)


def test_a_checkpoint_path_under_a_file_is_one_error(tmp_path):
    # a new user's try: --checkpoint-path /etc/passwd/x.bin ended in NotADirectoryError from
    # the probe's cleanup, a traceback after the right message
    (tmp_path / "file").write_text("")
    with pytest.raises(checkpoint.CheckpointError, match="cannot write a checkpoint there"):
        checkpoint.check_writable(tmp_path / "file" / "x.bin")


def test_a_checkpoint_written_before_the_package_layout_loads(tmp_path, model, monkeypatch):
    # the pending store pickled under its module of the flat connectors/ (connectors/pending.py):
    # the checkpoints and state-topic snapshots of an earlier release must load after an update
    import sys

    from river_pa.connectors.state import pending

    store = pending.PendingStore(10, None, 10_000)
    store.add("e1", pending.Pending({"a": 1.0}, True, 5))
    with monkeypatch.context() as flat:
        flat.setitem(sys.modules, "river_pa.connectors.pending", pending)
        for cls in (pending.Pending, pending.PendingStore):
            flat.setattr(cls, "__module__", "river_pa.connectors.pending")
        data = checkpoint.dumps({"model": model, "pending": store}, model, {}, None)
    assert b"river_pa.connectors.pending" in data and b"connectors.state.pending" not in data
    restored = checkpoint.loads(data, checkpoint.metadata(model), None, "mem")[1]["pending"]
    assert type(restored) is pending.PendingStore
    assert pickle.dumps(restored) == pickle.dumps(store)


def test_the_merge_keys_of_a_state_are_restored_only_when_well_formed():
    # a state written before them has none; a key of another shape would raise at every
    # comparison of the merge (a crash loop): dropped, lateness is counted afresh
    from river_pa.connectors.state.recovery import merge_keys
    assert merge_keys(None) == {} and merge_keys([(0, (1, 2, 3, 4))]) == {}
    keys = {0: (7, True, 0, 3), -1: (5, False, 2, 9), "0": (1, 1, 1, 1), 1: ("a", 1, 2, 3),
            2: (1, 2, 3), 3: [1, 2, 3, 4]}
    assert merge_keys(keys) == {0: (7, True, 0, 3), -1: (5, False, 2, 9)}
