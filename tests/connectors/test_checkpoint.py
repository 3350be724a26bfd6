"""Checkpoints: atomic, versioned, HMAC-verified before anything is unpickled."""

from __future__ import annotations

import json
import pickle

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
