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
import json
import math
import os
import pathlib

import numpy as np

from river_pa.evaluate.libsvm import CSR, open_data, read_libsvm

__all__ = ["Data", "load", "names", "shared_folder", "TASKS"]

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
    """Events of one data set: `x` feature dicts and `y` targets (lists, in order).

    `csr` holds the same events as CSR arrays with `csr.y` the targets as float64 (binary:
    +1/-1), or None when a feature is not numeric. With `csr`, the dicts `x` are built on
    first use (the compiled path never needs them).

    """

    def __init__(self, name: str, task: str, y: list, x: list | None = None,
                 csr: CSR | None = None):
        if x is None and csr is None:
            raise ValueError("Data needs feature dicts x or CSR arrays")
        self.name, self.task, self.y, self.csr = name, task, y, csr
        self._x = x

    @property
    def x(self) -> list:
        if self._x is None:
            self._x = list(self.csr.rows())
        return self._x

    def __len__(self) -> int:
        return len(self.y)

    def __iter__(self):
        return zip(self.x, self.y)

    def head(self, n: int) -> Data:
        """The first `n` events."""
        csr = None if self.csr is None else self.csr.head(n)
        x = None if self._x is None else self._x[:n]
        return Data(self.name, self.task, self.y[:n], x, csr)

    def without_csr(self) -> Data:
        """The same events as dicts only (the generic path)."""
        return Data(self.name, self.task, self.y, self.x)


def shared_folder() -> pathlib.Path:
    """The shared data folder: ``$RIVER_PA_DATA``, else ../shared/data from the repo root.

    A checkout in a subfolder (a git worktree such as ``work/wt/NAME``) finds the nearest
    ``shared/data`` above it.

    """
    env = os.environ.get("RIVER_PA_DATA")
    if env:
        return pathlib.Path(env)
    root = pathlib.Path(__file__).resolve().parent.parent
    for parent in root.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return root.parent / "shared" / "data"


def _base_extension(path: str) -> str:
    stem, ext = os.path.splitext(path)
    if ext in (".bz2", ".gz"):
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


def _sort_key(value):
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))


def _convert_targets(labels: list, task: str, where: str) -> list:
    if task == "binary":
        distinct = sorted(set(labels), key=_sort_key)
        if len(distinct) > 2:
            raise ValueError(f"{where}: a binary task needs two labels, found {len(distinct)}: "
                             f"{distinct[:5]}...")
        positive = distinct[-1]
        return [v == positive for v in labels]
    if task == "regression":
        out = []
        for i, v in enumerate(labels):
            try:
                out.append(float(v))
            except (TypeError, ValueError):
                out.append(math.nan)
            if not math.isfinite(out[-1]):
                raise ValueError(f"{where}: event {i + 1}: regression target {v!r} is not a "
                                 "finite number")
        return out
    return [int(v) if isinstance(v, float) and v.is_integer() else v for v in labels]


def _csr_targets(y: list, task: str) -> np.ndarray:
    if task == "binary":
        return np.where(np.asarray(y, dtype=bool), 1.0, -1.0)
    if task == "regression":
        return np.asarray(y, dtype=np.float64)
    return np.zeros(len(y))  # multiclass: the compiled path does not use targets


def _finish(name, task, x, labels, csr, where):
    if not labels:
        raise ValueError(f"{where}: no events")
    if task is None:
        task = _infer_task(labels)
    y = _convert_targets(labels, task, where)
    if csr is not None:
        csr.y = _csr_targets(y, task)
    return Data(name, task, y, x, csr)


# -- readers ---------------------------------------------------------------------------------


def _from_libsvm(path: str, name: str, task: str | None) -> Data:
    csr = read_libsvm(path)
    return _finish(name, task, None, csr.y.tolist(), csr, path)


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _from_csv(path: str, name: str, target, task: str | None) -> Data:
    """Read a CSV file; `target` names the target column (an int: its position, no header)."""
    with open_data(path, "rt") as f:
        rows = list(csv.reader(f))
    if rows and rows[0] and rows[0][0].startswith("\ufeff"):  # a UTF-8 byte order mark
        rows[0][0] = rows[0][0][1:]  # (spreadsheet exports) is not part of the first name
    if isinstance(target, int):
        header = [str(j) for j in range(len(rows[0]))] if rows else []
        first = 1
        target = header[target] if header else ""
    else:
        header, rows, first = (rows[0], rows[1:], 2) if rows else ([], [], 2)
        if target not in header:
            raise ValueError(f"{path}: no target column {target!r}; columns: {', '.join(header)}")
    repeated = sorted({k for k in header if header.count(k) > 1})
    if repeated:  # one feature dict key for two columns: the dicts and the CSR arrays disagree
        raise ValueError(f"{path}: column {repeated[0]!r} appears more than once in the header")
    t = header.index(target)
    keys = [k for j, k in enumerate(header) if j != t]
    x, labels = [], []
    numeric = True
    for line, row in enumerate(rows, start=first):
        if len(row) != len(header):
            raise ValueError(f"{path}:{line}: expected {len(header)} fields, found {len(row)}")
        values = [_number(v) for j, v in enumerate(row) if j != t]
        x.append({k: v for k, v in zip(keys, values) if v != ""})
        numeric = numeric and all(isinstance(v, float) and math.isfinite(v) for v in values)
        if row[t] == "":  # else a class "" (or a usage error far from the line)
            raise ValueError(f"{path}:{line}: the target {target!r} is empty")
        labels.append(_number(row[t]))
    csr = None
    if numeric and x:
        n, d = len(x), len(keys)
        data = np.array([list(e.values()) for e in x], dtype=np.float64).reshape(n * d)
        csr = CSR(np.arange(n + 1, dtype=np.int64) * d, np.tile(np.arange(d), n), data,
                  None, keys=keys)
    return _finish(name, task, x, labels, csr, path)


def _from_jsonl(path: str, name: str, task: str | None) -> Data:
    x, labels = [], []
    with open_data(path, "rt") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                event = json.loads(text)
                features, label = event["x"], event["y"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{line}: expected a JSON object "
                                 f'{{"x": {{...}}, "y": ...}} ({exc})') from None
            if not isinstance(features, dict):
                raise ValueError(f"{path}:{line}: 'x' must be an object, got {features!r}")
            if isinstance(label, list | dict):  # unhashable: the task cannot be inferred
                raise ValueError(f"{path}:{line}: 'y' must be a number, a string, true/false "
                                 f"or null, got {label!r}")
            x.append(features)
            labels.append(label)
    return _finish(name, task, x, labels, None, path)


def _from_river(name: str, task: str | None) -> Data:
    from river import datasets

    cls, default_task = RIVER[name]
    x, labels = [], []
    for features, label in getattr(datasets, cls)():
        x.append(features)
        labels.append(label)
    if task is None and default_task != "regression":
        task = _infer_task(labels) if len(set(labels)) == 2 else "multiclass"
    return _finish(name, task or default_task, x, labels, None, name)


def _from_shared(name: str, task: str | None) -> Data:
    folder = shared_folder()
    relative, default_task, target = SHARED[name]
    path = folder / relative
    if not path.exists():
        raise ValueError(f"shared data set {name!r} not found at {path}; set RIVER_PA_DATA to "
                         "the shared data folder (see its SOURCES.md)")
    if target is None:
        return _from_libsvm(str(path), name, task or default_task)
    return _from_csv(str(path), name, target, task or default_task)


def load(source: str, target: str | None = None, task: str | None = None) -> Data:
    """Load a data set by name or path (see the module docstring); ValueError if unknown.

    >>> data = load("phishing")
    >>> len(data), data.task, data.y[0]
    (1250, 'binary', True)
    >>> load("no-such-set")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown data set 'no-such-set'; choose one of phishing, bananas, ...JSONL file

    """
    if task is not None and task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if source in RIVER:
        return _from_river(source, task)
    if source in SHARED:
        return _from_shared(source, task)
    if os.path.isdir(source):
        raise ValueError(f"{source} is a directory; give a data set name or a file")
    if not os.path.isfile(source):
        choices = [n for n in RIVER if n != "trumpapproval"] + list(SHARED)
        raise ValueError(f"unknown data set {source!r}; choose one of {', '.join(choices)}, "
                         "or give a path to a libsvm, CSV (with --target) or JSONL file")
    ext = _base_extension(source)
    name = os.path.basename(source)
    if ext == ".csv" and target is None:
        raise ValueError(f"{source}: a CSV file needs --target COLUMN")
    try:
        if ext == ".csv":
            return _from_csv(source, name, target, task)
        if ext in (".jsonl", ".ndjson"):
            return _from_jsonl(source, name, task)
        return _from_libsvm(source, name, task)
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # unreadable, corrupt .gz/.bz2, binary
        raise ValueError(f"{source}: cannot read the file: {exc}") from None
