"""Atomic, versioned, optionally HMAC-signed checkpoints of the daemon's state.

File layout: one JSON header line (format, versions, model class and configuration, offsets, a
snapshot's term and version, signature), then the pickled state. The header is read and checked (the HMAC over
header fields and payload, then versions) before a single byte is unpickled, so a checkpoint
from another version or one that does not verify is refused with a clear error. The payload is
then unpickled by a restricted unpickler (`Unpickler`) that admits only the classes a model and
the daemon's state hold: with or without a key, no checkpoint file and no snapshot of the state
or model topics (which are in this format) runs code (the approach of skops.io; the standard
library has no such loader). Writes go to a temporary file that is fsynced and renamed over
the previous checkpoint, which is kept (hard-linked first) as `<path>.prev`: with
`--exactly-once` the daemon may need the checkpoint that matches the last committed transaction.

"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import pickle
import platform
import types
from pathlib import Path

from river_pa.connectors.errors import CheckpointError, VersionMismatch

__all__ = ["CheckpointError", "Unpickler", "VersionMismatch", "check_writable", "dumps", "load",
           "loads", "metadata", "read_header", "save", "trust"]

FORMAT = 1
PROBE_BYTES = 65_536  # written at start when there is no checkpoint yet


# What a model and the daemon's state pickle to (measured on every river_pa estimator, River
# pipelines of them, the state with Stats and PendingStore): classes of these packages, never
# their functions (a River or river-pa function may download or write files) ...
SAFE_PACKAGES = tuple(f"river.{p}" for p in (
    "_river_rust", "active", "anomaly", "bandit", "base", "cluster", "compose", "conf",
    "covariance", "drift", "dummy", "ensemble", "facto", "feature_extraction",
    "feature_selection", "forest", "imblearn", "linear_model", "metrics", "misc",
    "model_selection", "multiclass", "multioutput", "naive_bayes", "neighbors", "optim",
    "preprocessing", "proba", "reco", "rules", "sketch", "stats", "time_series", "tree", "utils",
)) + tuple(f"river_pa.{p}" for p in (
    "_core", "anomaly", "kernel", "linear_model", "multiclass", "multilabel", "paramfree",
    "structured", "connectors.state.pending", "connectors.observe.reporting",
    "connectors.observe.drift", "connectors.models.challengers",
))
# ... these classes (containers and scalars; bytes and bytearray are left out: called with an
# int they allocate that many bytes, and pickle has opcodes of its own for them) ...
SAFE_CLASSES = {
    ("builtins", n) for n in ("bool", "complex", "dict", "float", "frozenset", "int", "list",
                              "object", "set", "slice", "str", "tuple")
} | {("collections", n) for n in ("Counter", "OrderedDict", "defaultdict", "deque")} | {
    ("functools", "partial"),  # its function is a global too, so checked here as well
    ("random", "Random"), ("numpy", "dtype"), ("numpy", "ndarray"),
}
# ... and these functions: numpy's array and scalar reconstruction (numpy 1 and 2 paths), the
# cost function river-pa's cost-sensitive classifier holds by default
SAFE_FUNCTIONS = {
    (f"numpy.{core}.{module}", name) for core in ("core", "_core")
    for module, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"),
                         ("numeric", "_frombuffer"))
} | {("river_pa.multiclass.cost_sensitive", "zero_one_cost")}
_trusted: set[tuple[str, str]] = set()  # what the configured model pickles to (`trust`)


def _in_safe_package(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in SAFE_PACKAGES)


def _method(obj, name: str):
    """`getattr` as pickle uses it for a bound method (River's PA holds one): only a method of
    a class of a listed package, defined there, on an object unpickled already."""
    method = getattr(obj, name, None) if isinstance(name, str) and "__" not in name else None
    if not (isinstance(method, types.MethodType) and method.__self__ is obj
            and _in_safe_package(type(obj).__module__)
            and _in_safe_package(getattr(method.__func__, "__module__", None) or "")):
        raise pickle.UnpicklingError(f"refusing to unpickle builtins.getattr of {name!r:.80} on "
                                     f"a {type(obj).__name__} (only methods of a model's classes)")
    return method


def _safe(module: str, name: str) -> bool:
    """Whether global `module.name` may be loaded: a listed one, a trusted one, or a class
    of a listed package under its own name (so nothing reached through a re-exported name or
    an attribute, like `river.x.os.system` or `river_pa.X.__init__.__globals__`)."""
    if (module, name) in SAFE_CLASSES | SAFE_FUNCTIONS | _trusted | {("builtins", "getattr")}:
        return True
    if "__" in name or not _in_safe_package(module):
        return False
    try:
        obj = pickle.Unpickler.find_class(_NULL, module, name)
    except (ImportError, AttributeError):
        return False
    return isinstance(obj, type) and obj.__module__ == module and obj.__qualname__ == name


# Modules of the daemon's state classes (PendingStore, Stats) before connectors/ became
# packages: checkpoints and state-topic snapshots written by an earlier release load as before
MOVED = {"river_pa.connectors.pending": "river_pa.connectors.state.pending",
         "river_pa.connectors.reporting": "river_pa.connectors.observe.reporting"}


class Unpickler(pickle.Unpickler):
    """Refuses every global `_safe` does not admit, with an error naming it (nothing is
    imported or called for a refused one)."""

    def find_class(self, module: str, name: str):
        module = MOVED.get(module, module)
        if not _safe(module, name):
            raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} (not a class a "
                                         "model or the daemon's state holds)")
        return _method if (module, name) == ("builtins", "getattr") else super().find_class(
            module, name)

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing a persistent id")


_NULL = Unpickler(io.BytesIO(b""))  # resolves names for `_safe` (find_class of the base class)


def trust(model) -> None:
    """Admit the globals that `model` (the configured one: the configuration is trusted)
    pickles to, e.g. the classes of a `--model module:attribute` outside river and river-pa."""
    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            _trusted.add((module, name))
            return super().find_class(module, name)

    Recorder(io.BytesIO(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))).load()


def _unpickle(where, payload: bytes):
    """The state in `payload`, through `Unpickler`; CheckpointError naming what it refused."""
    try:
        return Unpickler(io.BytesIO(payload)).load()
    except pickle.UnpicklingError as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    except Exception as exc:  # a payload that verifies but does not unpickle (no key: forged)
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        raise CheckpointError(f"{where}: the payload does not unpickle ({text})") from None


def metadata(model) -> dict:
    """The version fields a checkpoint must match to be loaded: the versions, the model's class
    and its configuration (`model_config`)."""
    import river

    import river_pa

    cls = type(model)
    return {
        "format": FORMAT,
        "river_pa": river_pa.__version__,
        "river": river.__version__,
        "python": platform.python_version(),
        "model_class": f"{cls.__module__}.{cls.__qualname__}",
        "model_config": model_config(model),
    }


def model_config(model) -> str:
    """The parameters `model` was built with, its steps' and nested estimators' included (River's
    `_get_params`), as canonical JSON: the same in every process (sets sorted: a `compose.Select`
    keeps its keys in a set, ordered by PYTHONHASHSEED), so a pipeline or a C other than the
    checkpoint's is refused like another class (a new user's learner restarted with another
    pipeline restored the old one silently: every pipeline is one class).

    >>> from river_pa import PAClassifier
    >>> model_config(PAClassifier(C=0.5))[:29]
    '{"variant": "PA-I", "C": 0.5,'
    """
    params = model._get_params() if hasattr(model, "_get_params") else {}
    return json.dumps(_canonical(params))  # dicts keep their order: a pipeline's steps


def _canonical(value):
    """`value` as JSON values: dict keys as text, sets sorted, classes and functions by their
    qualified name, other objects by their class (no address)."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else repr(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    named = value if isinstance(value, (type, types.FunctionType)) else type(value)
    return f"{named.__module__}.{named.__qualname__}"


def _signature(key: bytes, header: dict, payload: bytes) -> str:
    signed = json.dumps({k: v for k, v in header.items() if k != "hmac"}, sort_keys=True)
    return hmac.new(key, signed.encode() + b"\n" + payload, hashlib.sha256).hexdigest()


def dumps(state: dict, model, offsets: dict[str, int], key: bytes | None,
          stamp: dict | None = None) -> bytes:
    """`state` in the checkpoint format: header (with `stamp`, a snapshot's term and version,
    covered by the signature) and pickle."""
    payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    header = {**metadata(model), "offsets": offsets, "sha256": hashlib.sha256(payload).hexdigest(),
              **(stamp or {})}
    if state.get("challengers"):  # a learner may start with one of them as its --model
        header["challengers"] = {name: {f: c["meta"][f] for f in MODEL_META}
                                 for name, c in state["challengers"].items()}
    if key:
        header["hmac"] = _signature(key, header, payload)
    return json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def save(path: str | Path, state: dict, model, offsets: dict[str, int], key: bytes | None,
         stamp: dict | None = None) -> None:
    """Write `dumps(...)` atomically (temp file, fsync, rename; the old file becomes `.prev`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dumps(state, model, offsets, key, stamp)
    tmp = path.with_name(path.name + ".tmp")
    try:
        _write_private(tmp, data)
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
        with contextlib.suppress(OSError):  # a parent that is a file: NotADirectoryError
            probe.unlink(missing_ok=True)


def _write_private(path: Path, data: bytes) -> None:
    """Write and fsync `data` to a new file readable by its owner only (0600): without a key,
    whoever can write a checkpoint decides the daemon's model; whoever can read it sees it."""
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


def _parse_header(where, line: bytes) -> dict:
    try:
        header = json.loads(line)
    except (ValueError, RecursionError):  # also bytes that are not UTF-8 (was a traceback)
        header = None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: not a river-pa checkpoint (no JSON header)")
    return header


def read_header(path: str | Path) -> dict:
    """The JSON header of a checkpoint (offsets, versions), without touching the payload."""
    try:
        with open(path, "rb") as fh:
            line = fh.readline()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read it ({exc.strerror})") from None
    return _parse_header(path, line)


def load(path: str | Path, model_factory_meta: dict, key: bytes | None) -> dict:
    """Verify then unpickle a checkpoint written by `save`; raise CheckpointError otherwise.

    `model_factory_meta` is `metadata(model)` for the model the daemon was configured with.
    """
    read_header(path)  # a directory, an unreadable file: the errors of `read_header`
    with open(path, "rb") as fh:
        return loads(fh.read(), model_factory_meta, key, path)[1]


def loads(data: bytes, model_factory_meta: dict | None, key: bytes | None, where,
          stamp: dict | None = None) -> tuple[dict, dict]:
    """(header, state) of checkpoint bytes `data` (a file's, a snapshot's, named `where` in
    errors): signature, versions (those of `model_factory_meta`; None: any, for a listing),
    digest and the snapshot's `stamp` (term and version, as its manifest says) checked before
    the restricted unpickler reads the payload."""
    line, _, payload = data.partition(b"\n")
    header = _parse_header(where, line)
    if not key and "hmac" in header:  # never load a signed file unchecked
        raise CheckpointError(f"{where}: the checkpoint is signed but no --checkpoint-key is "
                              "configured; refusing to load it unverified")
    if key:
        if "hmac" not in header:
            raise CheckpointError(f"{where}: a key is configured but the checkpoint is unsigned")
        if not (isinstance(header["hmac"], str)
                and hmac.compare_digest(header["hmac"], _signature(key, header, payload))):
            raise CheckpointError(f"{where}: HMAC does not verify (wrong key or tampered file)")
    if model_factory_meta is not None:
        _check_versions(where, header, model_factory_meta)
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise CheckpointError(f"{where}: payload is truncated or corrupt (sha256 mismatch)")
    for field, want in (stamp or {}).items():  # signed: a replay cannot be relabelled
        if header.get(field) != want:
            raise CheckpointError(f"{where}: its manifest says {field} {want!r}, the signed "
                                  f"header {header.get(field)!r}")
    return header, _unpickle(where, payload)


MODEL_META = ("model_class", "model_config")  # of `metadata`: what names the model


def same_meta(a, b) -> bool:
    """Whether metadata `a` and `b` (or their model fields only) name the same model: equal
    fields, the configurations compared as values (`{"C": 1}` is `{"C": 1.0}`: written either
    way on the command line, the model is the same)."""
    if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
        return False
    return all(_config(a[k]) == _config(b[k]) if k == "model_config" else a[k] == b[k]
               for k in a)


def _config(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return text


def _check_versions(path, header: dict, expected: dict) -> None:
    """Raise VersionMismatch unless the header's fields are `expected`'s, or differ only in the
    model, which is then one of the header's challengers (a promotion: the caller swaps it in)."""
    challengers = header.get("challengers")
    model = {f: expected[f] for f in MODEL_META}
    if isinstance(challengers, dict) and any(same_meta(model, c) for c in challengers.values()):
        expected = {k: v for k, v in expected.items() if k not in MODEL_META}
    for field, want in expected.items():
        if not same_meta({field: header.get(field)}, {field: want}):
            raise VersionMismatch(
                f"{path}: checkpoint has {field}={header.get(field)!r}, this daemon runs "
                f"{want!r}; refusing to load it (give the daemon the --model, --model-params and "
                f"versions that wrote it, or those of one of its challengers to promote it; a "
                f"learner with another model needs a new --group-id)"
            )
