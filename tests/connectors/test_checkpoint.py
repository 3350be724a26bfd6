"""Checkpoints: atomic, versioned, HMAC-verified before anything is unpickled."""

from __future__ import annotations

import json
import pickle
import resource

import pytest
from river import linear_model

from river_pa.connectors import checkpoint


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
