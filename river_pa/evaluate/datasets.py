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

"""

from __future__ import annotations

import csv
import itertools
import json
import lzma
import math
import os
import pathlib
import time

import numpy as np

from river_pa.evaluate.libsvm import (COMPRESSED, CSR, DataError, concatenate, iter_libsvm,
                                     open_data, parse_libsvm)

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
    each holding at most about `libsvm.CHUNK_BYTES` of the file's text or `ROWS` events.

    `task` is known once the first chunk is read (at construction, in `read_seconds`, after
    `warm()` compiled the parser or loaded it from Numba's cache, in `compile_seconds`). `size`
    is the file's size in bytes and `position()` the bytes read from it so far (compressed
    bytes for a compressed file), for progress. A bad line raises DataError naming the file
    and line when its chunk is read; `limit` stops after that many events.

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
        self.targets = _Targets(first[1], task, path)
        self.task = self.targets.task
        self.task_from = task_from if task else task_reason(self.task, first[1])
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
                x, labels, csr, lines = chunk
                y = self.targets.convert(labels, seen)
                if csr is not None:
                    csr.y = target_array(y, self.task)
                block = Data(self.name, self.task, y, x, csr, self.path, lines)
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


# -- targets ---------------------------------------------------------------------------------


def _infer_task(labels: list) -> str:
    distinct = set(labels)
    if len(distinct) == 2 or distinct <= {-1, 1} or distinct <= {0, 1}:
        return "binary"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct):
        return "regression"
    return "multiclass"


def task_reason(task: str, labels: list) -> str:
    """Why `_infer_task` took `task` from `labels` (the first chunk's), for the summary.

    >>> task_reason("regression", [1, 2, 3, 2])
    'inferred: 3 distinct numeric labels in the first 4 events (1, 2, 3), not two: give --task multiclass if they are classes'

    """
    distinct = sorted(set(labels), key=_sort_key)
    shown = ", ".join(map(repr, distinct[:5])) + (", ..." if len(distinct) > 5 else "")
    where = f"in the first {len(labels):,} events ({shown})"
    if task == "binary":
        return f"inferred: {len(distinct)} distinct labels {where}"
    if task == "regression":
        return (f"inferred: {len(distinct)} distinct numeric labels {where}, not two: give "
                "--task multiclass if they are classes")
    return f"inferred: {len(distinct)} distinct labels {where}, not all numbers"


def _sort_key(value):
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))


class _Targets:
    """Converts labels to the task's targets, chunk after chunk, with the task and the binary
    labels fixed by the first chunk (`first`): a binary task maps the larger of its two labels
    (in sort order) to True; a single label of -1 or 0 is False, the other one True."""

    def __init__(self, first: list, task: str | None, where: str):
        self.where = where
        self.task = task or _infer_task(first)
        self.labels = sorted(set(first), key=_sort_key)
        if self.task == "binary":
            if len(self.labels) > 2:
                raise DataError(f"{where}: a binary task needs two labels, found "
                                f"{len(self.labels)}: {self.labels[:5]}...")
            single = len(self.labels) == 1 and self.labels[0] in (-1, 0)
            self.positive = 1 if single else self.labels[-1]

    def convert(self, labels: list, seen: int) -> list:
        """The targets of `labels`, events `seen + 1`... of the data."""
        if self.task == "binary":
            new = set(labels).difference(self.labels)
            if new:
                self._check_binary(labels, new, seen)
            return [v == self.positive for v in labels]
        if self.task == "regression":
            out = []
            for i, v in enumerate(labels):
                try:
                    out.append(float(v))
                except (TypeError, ValueError):
                    out.append(math.nan)
                if not math.isfinite(out[-1]):
                    raise DataError(f"{self.where}: event {seen + i + 1}: regression target "
                                    f"{v!r} is not a finite number")
            return out
        return [int(v) if isinstance(v, float) and v.is_integer() else v for v in labels]

    def _check_binary(self, labels: list, new: set, seen: int) -> None:
        known = set(self.labels)
        for i, v in enumerate(labels):
            if v in known:
                continue
            known.add(v)
            negatives = known - {self.positive}
            if len(negatives) > 1 or _sort_key(v) > _sort_key(self.positive):
                raise DataError(
                    f"{self.where}: event {seen + i + 1}: label {v!r}: a binary task takes two "
                    f"labels, the larger one True, and {sorted(known, key=_sort_key)} were "
                    "met (the task was inferred from the first chunk; give --task)")
        self.labels = sorted(known, key=_sort_key)


def target_array(y: list, task: str) -> np.ndarray:
    """Targets as the compiled path takes them: float64, binary ones as +1/-1."""
    if task == "binary":
        return np.where(np.asarray(y, dtype=bool), 1.0, -1.0)
    if task == "regression":
        return np.asarray(y, dtype=np.float64)
    return np.zeros(len(y))  # multiclass: the compiled path does not use targets


class _LabelKinds:
    """Refuses missing labels and labels of mixed kinds (numbers, strings, true/false), with
    the file and line: `y: 1, null, 1` became a binary task with 1 -> False."""

    _KINDS = ((bool, "true/false"), (int | float, "a number"), (str, "a string"))

    def __init__(self, where: str, field: str):
        self.where, self.field = where, field
        self.kind = self.first_line = None

    def check(self, label, line: int) -> None:
        if label is None or (isinstance(label, float) and math.isnan(label)):
            raise DataError(f"{self.where}:{line}: the label {self.field!r} is missing "
                            f"({label!r})")
        kind = next(name for cls, name in self._KINDS if isinstance(label, cls))
        if self.kind is None:
            self.kind, self.first_line = kind, line
        elif kind != self.kind:
            raise DataError(f"{self.where}:{line}: the label {label!r} is {kind}, but the one "
                            f"on line {self.first_line} is {self.kind}: labels of one kind only")


# -- readers: each yields chunks (x dicts or None, labels, CSR or None) ------------------------

ROWS = 20_000  # events a CSV or JSONL chunk holds


def _libsvm_chunks(path: str):
    def chunks(raw):
        for csr in iter_libsvm(path, raw=raw):
            yield None, csr.y.tolist(), csr, None

    return chunks


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _csv_header(reader, path: str, target):
    """(header, target column index, the rows read to find them) of a CSV file."""
    if isinstance(target, int):  # no header: the target is a position
        first = next(reader, None)
        if first is None:
            return [], None, []
        header = [str(j) for j in range(len(first))]
        return header, header.index(header[target]), [first]
    header = next(reader, [])
    if header and header[0].startswith("\ufeff"):  # a UTF-8 byte order mark (spreadsheet
        header[0] = header[0][1:]                   # exports) is not part of the first name
    if target not in header:
        raise DataError(f"{path}: no target column {target!r}; columns: {', '.join(header)}")
    repeated = sorted({k for k in header if header.count(k) > 1})
    if repeated:  # one feature dict key for two columns: the dicts and the CSR arrays disagree
        raise DataError(f"{path}: column {repeated[0]!r} appears more than once in the header")
    return header, header.index(target), []


CSV_FIELD_LIMIT = 131072  # bytes per field: the standard library's default, which bounds memory


def _csv_chunks(path: str, target):
    """CSV rows by the standard library's C reader, ROWS at a time; a chunk whose features are
    all finite numbers also comes as CSR arrays."""
    def chunks(raw):
        with open_data(path, "rt", raw) as f:
            # the limit is process-wide and other libraries lift it (scipy's ARFF reader sets it
            # to the maximum): set ours for every file
            csv.field_size_limit(CSV_FIELD_LIMIT)
            reader = csv.reader(f)
            try:
                yield from _csv_rows(reader, path, target)
            except csv.Error as exc:  # the field size limit (128 KiB) keeps memory bounded
                raise DataError(f"{path}:{reader.line_num}: {exc} (an unclosed quote?)") \
                    from None

    return chunks


def _csv_rows(reader, path: str, target):
    """The chunks of `_csv_chunks` from a `csv.reader`."""
    header, t, pending = _csv_header(reader, path, target)
    if t is None:
        return
    keys = [k for j, k in enumerate(header) if j != t]
    kinds = _LabelKinds(path, header[t])
    # each row with its last line's number (a quoted field may span several)
    rows = itertools.chain([(1, row) for row in pending],
                           ((reader.line_num, row) for row in reader))
    while True:
        block = list(itertools.islice(rows, ROWS))
        if not block:
            return
        x, labels, lines = [], [], []
        for line, row in block:
            if len(row) != len(header):
                raise DataError(f"{path}:{line}: expected {len(header)} fields, found "
                                f"{len(row)}")
            values = [_number(v) for j, v in enumerate(row) if j != t]
            x.append({k: v for k, v in zip(keys, values) if v != ""})
            if row[t] == "":  # else a class "" (or a usage error far from the line)
                raise DataError(f"{path}:{line}: the target {header[t]!r} is empty")
            labels.append(_number(row[t]))
            kinds.check(labels[-1], line)
            lines.append(line)
        csr = dicts_csr(x)
        if csr is None:
            _check_values(x, lines, path)
        yield x, labels, csr, lines


def dicts_csr(x: list) -> CSR | None:
    """The feature dicts `x` as CSR arrays (`csr.keys` the feature keys, numbered in order of
    first appearance, each row in its dict's order, so the compiled path adds in the same
    order as `learn_one`), or None if a value is not a finite int or float.

    >>> csr = dicts_csr([{"a": 1.0, "b": 2}, {"b": 0.5}])
    >>> csr.indptr.tolist(), csr.indices.tolist(), csr.data.tolist(), csr.keys
    ([0, 2, 3], [0, 1, 1], [1.0, 2.0, 0.5], ['a', 'b'])

    """
    columns: dict = {}
    indptr, indices, data = [0], [], []
    for event in x:
        for key, value in event.items():
            if type(value) not in (float, int) or not math.isfinite(value):
                return None
            indices.append(columns.setdefault(key, len(columns)))
            data.append(value)
        indptr.append(len(indices))
    return CSR(np.array(indptr, np.int64), np.array(indices, np.int64),
               np.array(data, np.float64), None, keys=list(columns))


def _jsonl_chunks(path: str):
    def chunks(raw):
        kinds = _LabelKinds(path, "y")
        with open_data(path, "rt", raw) as f:
            numbered = enumerate(f, start=1)
            while True:
                x, labels, lines, read = [], [], [], False
                for line, text in itertools.islice(numbered, ROWS):
                    read = True
                    if text.strip():
                        features, label = _jsonl_event(text, path, line)
                        kinds.check(label, line)
                        x.append(features)
                        labels.append(label)
                        lines.append(line)
                if not read:
                    return
                if x:
                    csr = dicts_csr(x)
                    if csr is None:
                        _check_values(x, lines, path)
                    yield x, labels, csr, lines

    return chunks


def _jsonl_event(text: str, path: str, line: int):
    """(x, y) of one JSONL line; DataError naming the line otherwise."""
    expected = 'expected a JSON object {"x": {...}, "y": ...}'
    try:
        event = json.loads(text)
    except RecursionError:  # nesting deeper than the interpreter's stack
        raise DataError(f"{path}:{line}: JSON nested too deeply") from None
    except ValueError as exc:  # invalid JSON, an integer of more than 4,300 digits
        raise DataError(f"{path}:{line}: {expected}, not valid JSON: {str(exc):.200}") from None
    if not isinstance(event, dict):
        raise DataError(f"{path}:{line}: {expected}, got {_JSON_TYPES.get(type(event), 'a value')}")
    missing = [repr(k) for k in ("x", "y") if k not in event]
    if missing:
        raise DataError(f"{path}:{line}: {expected}; it has no {' and no '.join(missing)}")
    features, label = event["x"], event["y"]
    if not isinstance(features, dict):
        raise DataError(f"{path}:{line}: 'x' must be an object, got {features!r:.60}")
    if isinstance(label, list | dict):  # unhashable: no task can take it
        raise DataError(f"{path}:{line}: 'y' must be a number, a string or true/false, got "
                        f"{label!r:.60}")
    return features, label


_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "true/false", type(None): "null"}


def _check_values(x: list, lines: list, path: str) -> None:
    """DataError naming the line and feature of the first number in `x` (one chunk's events,
    read from `lines`) that is not finite (NaN, infinity, 1e400): no learner can take it.
    Strings stay (a River pipeline may encode them; a river_pa learner refuses them, naming
    the event). Called only when `dicts_csr` refused the chunk, so a numeric chunk pays
    nothing."""
    for features, line in zip(x, lines):
        for key, value in features.items():
            if type(value) is float and not math.isfinite(value):
                raise DataError(f"{path}:{line}: feature {key!r}: value {value!r} is not "
                                "finite")


def _guarded(chunks, path: str):
    """`chunks` with read errors (unreadable, corrupt compressed data, binary text) as
    DataError naming the file."""
    def guarded(raw):
        try:
            yield from chunks(raw)
        except (OSError, EOFError, UnicodeDecodeError, lzma.LZMAError) as exc:
            raise DataError(f"{path}: cannot read the file: {exc}") from None

    return guarded


def _finish(name, task, x, labels, where) -> Data:
    if not labels:
        raise DataError(f"{where}: no events")
    targets = _Targets(labels, task, where)
    y = targets.convert(labels, 0)
    csr = dicts_csr(x)
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
        task = _infer_task(labels) if len(set(labels)) == 2 else "multiclass"
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
        return Stream(source, path, _guarded(_csv_chunks(path, target), path),
                      task or RIVER[source][1], limit, task_from=_task_from(task))
    if source in RIVER:
        data = _from_river(source, task)
        return data if limit is None else data.head(limit)
    given = task
    path, name, target, task = _file(source, target, task)
    ext = _base_extension(path)
    warm = None
    if ext == ".csv" or target is not None:
        chunks = _csv_chunks(path, target)
    elif ext in (".jsonl", ".ndjson"):
        chunks = _jsonl_chunks(path)
    else:
        chunks, warm = _libsvm_chunks(path), lambda: parse_libsvm(b"1 1:1\n")
    try:
        return Stream(name, path, _guarded(chunks, path), task, limit, warm,
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
