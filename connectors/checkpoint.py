"""Atomic, versioned, optionally HMAC-signed checkpoints of the daemon's state.

File layout: one JSON header line (format, versions, model class, offsets, signature), then the
pickled state. The header is read and checked (versions, then the HMAC over header fields and
payload) before a single byte is unpickled, so a checkpoint from another version or one that
does not verify is refused with a clear error. Writes go to a temporary file that is fsynced and
renamed over the previous checkpoint, which is kept (hard-linked first) as `<path>.prev`: with
`--exactly-once` the daemon may need the checkpoint that matches the last committed transaction.

"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import platform
from pathlib import Path

__all__ = ["CheckpointError", "check_writable", "load", "metadata", "read_header", "save"]

FORMAT = 1
PROBE_BYTES = 65_536  # written at start when there is no checkpoint yet


class CheckpointError(RuntimeError):
    """A checkpoint that must not be loaded, with the reason."""


def metadata(model) -> dict:
    """The version fields a checkpoint must match to be loaded."""
    import river

    import river_pa

    cls = type(model)
    return {
        "format": FORMAT,
        "river_pa": river_pa.__version__,
        "river": river.__version__,
        "python": platform.python_version(),
        "model_class": f"{cls.__module__}.{cls.__qualname__}",
    }


def _signature(key: bytes, header: dict, payload: bytes) -> str:
    signed = json.dumps({k: v for k, v in header.items() if k != "hmac"}, sort_keys=True)
    return hmac.new(key, signed.encode() + b"\n" + payload, hashlib.sha256).hexdigest()


def save(path: str | Path, state: dict, model, offsets: dict[str, int], key: bytes | None) -> None:
    """Write `state` atomically (temp file, fsync, rename; the old file becomes `.prev`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    header = {**metadata(model), "offsets": offsets, "sha256": hashlib.sha256(payload).hexdigest()}
    if key:
        header["hmac"] = _signature(key, header, payload)
    tmp = path.with_name(path.name + ".tmp")
    try:
        _write_private(tmp, json.dumps(header, sort_keys=True).encode() + b"\n" + payload)
    except OSError as exc:  # a full disk: no traceback, no stale .tmp; the old file stays
        tmp.unlink(missing_ok=True)
        raise CheckpointError(f"{path}: cannot write a checkpoint there ({exc.strerror})") from None
    if path.exists():  # keep it as .prev; `path` itself never goes missing, even on SIGKILL
        prev_tmp = path.with_name(path.name + ".prev.tmp")
        prev_tmp.unlink(missing_ok=True)
        os.link(path, prev_tmp)
        os.replace(prev_tmp, path.with_name(path.name + ".prev"))
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def check_writable(path: str | Path) -> None:
    """Raise CheckpointError unless `save` can write next to `path` (checked at start: the
    first save comes after a batch of predictions, and a restart would repeat it for ever)."""
    path = Path(path)
    probe = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # as many bytes as the next checkpoint will take: on a full disk an empty probe passed,
        # and every restart re-emitted the predictions since the last checkpoint, then died
        size = path.stat().st_size if path.is_file() else PROBE_BYTES
        _write_private(probe, bytes(max(size, PROBE_BYTES)))
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot write a checkpoint there ({exc.strerror})") from None
    finally:
        probe.unlink(missing_ok=True)


def _write_private(path: Path, data: bytes) -> None:
    """Write and fsync `data` to a new file readable by its owner only (0600): whoever can
    write a checkpoint runs code in the daemon, whoever can read it sees the model."""
    path.unlink(missing_ok=True)  # O_CREAT's mode applies to a new file only
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_header(path: str | Path) -> dict:
    """The JSON header of a checkpoint (offsets, versions), without touching the payload."""
    try:
        with open(path, "rb") as fh:
            line = fh.readline()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        header = json.loads(line)
    except ValueError:  # also bytes that are not UTF-8 (a UnicodeDecodeError was a traceback)
        header = None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a river-pa checkpoint (no JSON header)")
    return header


def load(path: str | Path, model_factory_meta: dict, key: bytes | None) -> dict:
    """Verify then unpickle a checkpoint written by `save`; raise CheckpointError otherwise.

    `model_factory_meta` is `metadata(model)` for the model the daemon was configured with.
    """
    header = read_header(path)
    with open(path, "rb") as fh:
        fh.readline()
        payload = fh.read()
    _check_versions(path, header, model_factory_meta)
    if not key and "hmac" in header:  # never load a signed file unchecked
        raise CheckpointError(f"{path}: the checkpoint is signed but no --checkpoint-key is "
                              "configured; refusing to load it unverified")
    if key:
        if "hmac" not in header:
            raise CheckpointError(f"{path}: a key is configured but the checkpoint is unsigned")
        if not hmac.compare_digest(header["hmac"], _signature(key, header, payload)):
            raise CheckpointError(f"{path}: HMAC does not verify (wrong key or tampered file)")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise CheckpointError(f"{path}: payload is truncated or corrupt (sha256 mismatch)")
    return pickle.loads(payload)


def _check_versions(path, header: dict, expected: dict) -> None:
    for field, want in expected.items():
        if header.get(field) != want:
            raise CheckpointError(
                f"{path}: checkpoint has {field}={header.get(field)!r}, this daemon runs "
                f"{want!r}; refusing to load it (start with a fresh checkpoint path)"
            )
