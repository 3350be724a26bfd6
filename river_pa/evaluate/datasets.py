"""Data sources for `river-pa evaluate`: River's bundled sets, the shared sets, and files.

`load(name_or_path, target=None, task=None)` returns a `Data`: the events in order (feature
dicts and targets), the task ("binary", "multiclass" or "regression") and, when every
feature is numeric, the same events as CSR arrays (`Data.csr`) for the compiled fast path.

Names:

* River's bundled sets (offline): phishing, bananas, trump-approval (or trumpapproval),
  chick-weights, image-segments, shuttle.
* The shared sets (../shared/data from the repository root, or the folder in the
  environment variable ``RIVER_PA_DATA``; see its SOURCES.md): a9a, a9a-test,
  phishing-full (the 11,055-event LIBSVM phishing, not River's 1,250-event sample),
  mushrooms, abalone, cadata, elec2, usps, usps-test, mnist-5k.
* A file path: libsvm (any other extension, ``.bz2``/``.gz`` allowed), CSV (``.csv``, needs
  `target`, the name of the target column) or JSONL (``.jsonl``/``.ndjson``, one
  ``{"x": {...}, "y": ...}`` object a line).

Targets: a binary task maps its two labels to bool, the larger one (in sort order) being
True, so -1/+1, 0/1 and mushrooms' 1/2 all become False/True. Multiclass labels stay as they
are (integral numbers as int). Regression targets are floats. The task comes from `task` if
given, else from the data set, else from the labels (two distinct labels: binary; numbers:
regression; anything else: multiclass). A single label of -1, 0 or +1 counts as binary.

The files are read by `river_pa.evaluate.readers`, their labels made targets by
`river_pa.evaluate.targets`.

"""

from __future__ import annotations

import os
import pathlib
import time

from river_pa.evaluate import readers
from river_pa.evaluate.files import COMPRESSED, CSR, DataError, concatenate
from river_pa.evaluate.libsvm import parse_libsvm
from river_pa.evaluate.targets import Targets, infer_task, target_array, task_reason

__all__ = ["Data", "DataError", "Stream", "TASKS", "load", "names", "open_source", "shared_folder"]

TASKS = ("binary", "multiclass", "regression")

# River's bundled sets that load offline: name -> (class name, task)
RIVER = {
    "phishing": ("Phishing", "binary"),
    "bananas": ("Bananas", "binary"),
    "trump-approval": ("TrumpApproval", "regression"),
    "trumpapproval": ("TrumpApproval", "regression"),
    "chick-weights": ("ChickWeights", "regression"),
    "image-segments": ("ImageSegments", "multiclass"),
    "shuttle": ("Shuttle", "binary"),
}

# River's bundled sets read straight from River's file as CSV (target column), equal to
# River's reader: importing river.datasets costs 1-1.4 s here (it imports scipy.io, scipy.special
# and joblib), longer than the whole default job
RIVER_FILES = {"phishing": ("phishing.csv.gz", "is_phishing")}

# The shared sets: name -> (relative path, task, CSV target column or None for libsvm)
SHARED = {
    "a9a": ("a9a/a9a.bz2", "binary", None),
    "a9a-test": ("a9a/a9a.t.bz2", "binary", None),
    "phishing-full": ("phishing/phishing.bz2", "binary", None),
    "mushrooms": ("mushrooms/mushrooms.bz2", "binary", None),
    "abalone": ("abalone/abalone_scale.bz2", "regression", None),
    "cadata": ("cadata/cal_housing.csv.gz", "regression", "medianHouseValue"),
    "elec2": ("elec2/elec.csv.gz", "binary", "class"),
    "usps": ("usps/usps.bz2", "multiclass", None),
    "usps-test": ("usps/usps.t.bz2", "multiclass", None),
    "mnist-5k": ("mnist_5k/mnist_5k.csv.gz", "multiclass", -1),  # no header: last column
}


def names() -> list[str]:
    """Every data set name `load` knows."""
    return sorted(RIVER) + sorted(SHARED)


class Data:
    """Events of one data set, or one chunk of a `Stream`: `x` feature dicts and `y` targets
    (lists, in order).

    `csr` holds the same events as CSR arrays with `csr.y` the targets as float64 (binary:
    +1/-1), or None when a feature is not numeric. With `csr`, the dicts `x` are built on
    first use (the compiled path never needs them). A chunk of a CSV or JSONL file knows the
    line of each event (`where`), so an event a model refuses is named like a bad line.

    """

    size = None  # bytes of the file (a Stream's), for progress
    task_from = "the data set's"  # a Stream's: "given", "the data set's" or why its labels gave the task
    compile_seconds = read_seconds = 0.0  # a Stream's: see there

    def __init__(self, name: str, task: str, y: list, x: list | None = None,
                 csr: CSR | None = None, path: str | None = None, lines: list | None = None):
        if x is None and csr is None:
            raise ValueError("Data needs feature dicts x or CSR arrays")
        self.name, self.task, self.y, self.csr = name, task, y, csr
        self._x = x
        self.path, self.lines = path, lines

    @property
    def x(self) -> list:
        if self._x is None:
            self._x = list(self.csr.rows())
        return self._x

    def __len__(self) -> int:
        return len(self.y)

    def __iter__(self):
        return zip(self.x, self.y)

    def blocks(self):
        """The events as chunks (`Data`): here all of them at once."""
        yield self

    def position(self) -> int:
        return 0

    def where(self, i: int) -> str | None:
        """'file:line' of event `i` (0-based) when the chunk was read from a CSV or JSONL file."""
        return None if self.lines is None else f"{self.path}:{self.lines[i]}"

    def head(self, n: int) -> Data:
        """The first `n` events."""
        csr = None if self.csr is None else self.csr.head(n)
        x = None if self._x is None else self._x[:n]
        lines = None if self.lines is None else self.lines[:n]
        return Data(self.name, self.task, self.y[:n], x, csr, self.path, lines)

    def without_csr(self) -> Data:
        """The same events as dicts only (the generic path)."""
        return Data(self.name, self.task, self.y, self.x, None, self.path, self.lines)


class Stream:
    """The events of a file read in bounded chunks: `blocks()` yields them as `Data`, in order,
    each holding at most about `libsvm.CHUNK_BYTES` of the file's text or `readers.ROWS` events.

    `chunks(raw)` is a reader's (`river_pa.evaluate.readers`) over the open file. `task` is
    known once the first chunk is read (at construction, in `read_seconds`, after `warm()`
    compiled the parser or loaded it from Numba's cache, in `compile_seconds`). `size` is the
    file's size in bytes and `position()` the bytes read from it so far (compressed bytes for
    a compressed file), for progress. A bad line raises DataError naming the file and line
    when its chunk is read; `limit` stops after that many events.

    """

    def __init__(self, name: str, path: str, chunks, task: str | None,
                 limit: int | None = None, warm=None, task_from: str = "given"):
        self.name, self.path, self.limit = name, path, limit
        start = time.perf_counter()
        if warm is not None:
            warm()
        self.compile_seconds = time.perf_counter() - start
        self._raw = open(path, "rb")
        self.size = os.fstat(self._raw.fileno()).st_size
        self._chunks = chunks(self._raw)
        first = next(self._chunks, None)
        self.read_seconds = time.perf_counter() - start - self.compile_seconds
        if first is None:
            self._raw.close()
            raise DataError(f"{path}: no events")
        self.targets = Targets(first.labels, task, path)
        self.task = self.targets.task
        self.task_from = task_from if task else task_reason(self.task, first.labels)
        self._first = first

    def position(self) -> int:
        return self._raw.tell() if not self._raw.closed else self.size

    def blocks(self):
        """The chunks, as `Data` with targets converted (DataError for a label the task
        cannot take, naming the event)."""
        seen = 0
        try:
            chunk = self._first
            while chunk is not None:
                y = self.targets.convert(chunk.labels, seen)
                if chunk.csr is not None:
                    chunk.csr.y = target_array(y, self.task)
                block = Data(self.name, self.task, y, chunk.x, chunk.csr, self.path,
                             chunk.lines)
                if self.limit is not None and seen + len(block) >= self.limit:
                    yield block.head(self.limit - seen)
                    return
                seen += len(block)
                yield block
                chunk = next(self._chunks, None)
        finally:
            self._raw.close()


def shared_folders() -> list[pathlib.Path]:
    """Where the shared data may be, in order: ``$RIVER_PA_DATA`` alone if set, else
    ``shared/data`` in the current folder or the nearest one above it (``../shared/data`` from
    a repository root), then the same above the checkout river_pa runs from (an editable
    install run from elsewhere)."""
    env = os.environ.get("RIVER_PA_DATA")
    if env:
        return [pathlib.Path(env)]
    cwd = pathlib.Path.cwd()
    here = pathlib.Path(__file__).resolve().parent.parent.parent
    out = []
    for start in (cwd, here):
        found = next((p / "shared" / "data" for p in (start, *start.parents)
                      if (p / "shared" / "data").is_dir()), start.parent / "shared" / "data")
        if found not in out:
            out.append(found)
    return out


def shared_folder() -> pathlib.Path:
    """The shared data folder: the first of `shared_folders` that exists (else the first)."""
    folders = shared_folders()
    return next((f for f in folders if f.is_dir()), folders[0])


def _base_extension(path: str) -> str:
    stem, ext = os.path.splitext(path)
    if ext in COMPRESSED:
        ext = os.path.splitext(stem)[1]
    return ext.lower()


def _finish(name, task, x, labels, where) -> Data:
    if not labels:
        raise DataError(f"{where}: no events")
    targets = Targets(labels, task, where)
    y = targets.convert(labels, 0)
    csr = readers.dicts_csr(x)
    if csr is not None:
        csr.y = target_array(y, targets.task)
    return Data(name, targets.task, y, x, csr)


def _from_river(name: str, task: str | None) -> Data:
    from river import datasets

    cls, default_task = RIVER[name]
    x, labels = [], []
    for features, label in getattr(datasets, cls)():
        x.append(features)
        labels.append(label)
    if task is None and default_task != "regression":
        task = infer_task(labels) if len(set(labels)) == 2 else "multiclass"
    return _finish(name, task or default_task, x, labels, name)


def _river_folder() -> pathlib.Path:
    """River's package folder, found without importing River."""
    import importlib.util

    return pathlib.Path(importlib.util.find_spec("river").origin).parent


def _file(source: str, target, task: str | None) -> tuple:
    """(path, name, target, task) of a data set name or a file; ValueError if unknown."""
    if source in SHARED:
        relative, default_task, target = SHARED[source]
        paths = [folder / relative for folder in shared_folders()]
        path = next((p for p in paths if p.exists()), None)
        if path is None:
            raise ValueError(f"shared data set {source!r} not found (looked for "
                             f"{' and '.join(map(str, paths))}); set RIVER_PA_DATA to the "
                             "shared data folder (see its SOURCES.md)")
        return str(path), source, target, task or default_task
    if os.path.isdir(source):
        raise ValueError(f"{source} is a directory; give a data set name or a file")
    if not os.path.isfile(source) and (os.sep in source or "/" in source
                                       or os.path.splitext(source)[1]):
        raise ValueError(f"{source}: no such file")
    if not os.path.isfile(source):
        choices = [n for n in RIVER if n != "trumpapproval"] + list(SHARED)
        raise ValueError(f"unknown data set {source!r}; choose one of {', '.join(choices)}, "
                         "or give a path to a libsvm, CSV (with --target) or JSONL file")
    if _base_extension(source) == ".csv" and target is None:
        raise ValueError(f"{source}: a CSV file needs --target COLUMN")
    return source, os.path.basename(source), target, task


def _task_from(given: str | None) -> str:
    """The summary's `task_from` for a task known before the labels are read: the user's
    --task, or the named data set's own (`task_from: given` when no task was given misled)."""
    return "given" if given else "the data set's"


def open_source(source: str, target: str | None = None, task: str | None = None,
                limit: int | None = None) -> Data | Stream:
    """The events of a data set name or a file (see the module docstring): River's bundled
    sets as one `Data`, files as a `Stream` read in bounded chunks; `limit` keeps the first
    events only. ValueError if unknown, DataError for a bad file.

    >>> source = open_source("phishing")  # River's file, read as CSV in chunks
    >>> source.task, sum(len(block) for block in source.blocks())
    ('binary', 1250)

    """
    if task is not None and task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if source in RIVER_FILES:
        filename, target = RIVER_FILES[source]
        path = str(_river_folder() / "datasets" / filename)
        return Stream(source, path, readers.guarded(readers.csv_chunks(path, target), path),
                      task or RIVER[source][1], limit, task_from=_task_from(task))
    if source in RIVER:
        data = _from_river(source, task)
        return data if limit is None else data.head(limit)
    given = task
    path, name, target, task = _file(source, target, task)
    ext = _base_extension(path)
    warm = None
    if target is not None and ext in (".jsonl", ".ndjson"):  # read as CSV, its error misleads
        raise ValueError(f"{path}: --target names a CSV column; a JSONL file holds one "
                         '{"x": {...}, "y": ...} object a line, and takes no --target')
    if ext == ".csv" or target is not None:
        chunks = readers.csv_chunks(path, target)
    elif ext in (".jsonl", ".ndjson"):
        chunks = readers.jsonl_chunks(path)
    else:
        chunks, warm = readers.libsvm_chunks(path), lambda: parse_libsvm(b"1 1:1\n")
    try:
        return Stream(name, path, readers.guarded(chunks, path), task, limit, warm,
                      task_from=_task_from(given))
    except OSError as exc:
        raise DataError(f"{path}: cannot read the file: {exc}") from None


def load(source: str, target: str | None = None, task: str | None = None) -> Data:
    """All the events of a data set name or a file in memory (see `open_source`).

    >>> data = load("phishing")
    >>> len(data), data.task, data.y[0]
    (1250, 'binary', True)
    >>> load("no-such-set")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown data set 'no-such-set'; choose one of phishing, bananas, ...JSONL file

    """
    source = open_source(source, target, task)
    if isinstance(source, Data):
        return source
    blocks = list(source.blocks())
    y = [v for b in blocks for v in b.y]
    if all(b.csr is not None for b in blocks):
        return Data(source.name, source.task, y, csr=concatenate([b.csr for b in blocks]))
    return Data(source.name, source.task, y, [e for b in blocks for e in b.x])
