"""Readers of libsvm, CSV and JSONL files: each yields a file's events as `Chunk`s, in order.

A reader is a function of the path (and the CSV target column) that returns `chunks(raw)`, a
generator over the open binary file `raw`; `datasets.Stream` turns the chunks' labels into
targets. A CSV or JSONL chunk holds at most `ROWS` events, a libsvm one about
`libsvm.CHUNK_BYTES` of text. A bad line raises DataError naming the file and line, and
`guarded` turns read errors (corrupt compressed data, binary text) into DataError too.

"""

from __future__ import annotations

import csv
import itertools
import json
import lzma
import math
import typing

import numpy as np

from river_pa._core.validation import MAX_INPUT, check_input_value
from river_pa.evaluate.files import CSR, DataError, open_data
from river_pa.evaluate.libsvm import iter_libsvm

__all__ = ["CSV_FIELD_LIMIT", "ROWS", "Chunk", "csv_chunks", "dicts_csr", "guarded",
           "jsonl_chunks", "libsvm_chunks"]

ROWS = 20_000  # events a CSV or JSONL chunk holds
CSV_FIELD_LIMIT = 131072  # bytes per field: the standard library's default, which bounds memory


class Chunk(typing.NamedTuple):
    """Events as a reader yields them, their labels as read (not yet targets)."""

    x: list | None  # feature dicts; None from libsvm (built from `csr` when needed)
    labels: list
    csr: CSR | None  # the same events as CSR arrays, None when a feature is not a finite number
    lines: list | None  # the line of each event in a CSV or JSONL file


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


def libsvm_chunks(path: str):
    def chunks(raw):
        for csr in iter_libsvm(path, raw=raw):
            yield Chunk(None, csr.y.tolist(), csr, None)

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


def csv_chunks(path: str, target):
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
    """The chunks of `csv_chunks` from a `csv.reader`."""
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
        yield _dicts_chunk(x, labels, lines, path)


def _dicts_chunk(x: list, labels: list, lines: list, path: str) -> Chunk:
    """The chunk of feature dicts read from `lines`, with CSR arrays when they are all finite
    numbers, else checked for values no learner can take (`_check_values`)."""
    csr = dicts_csr(x)
    if csr is None:
        _check_values(x, lines, path)
    return Chunk(x, labels, csr, lines)


def dicts_csr(x: list) -> CSR | None:
    """The feature dicts `x` as CSR arrays (`csr.keys` the feature keys, numbered in order of
    first appearance, each row in its dict's order, so the compiled path adds in the same
    order as `learn_one`), or None if a value is not an int or float below `MAX_INPUT` (1e150)
    in magnitude.

    >>> csr = dicts_csr([{"a": 1.0, "b": 2}, {"b": 0.5}])
    >>> csr.indptr.tolist(), csr.indices.tolist(), csr.data.tolist(), csr.keys
    ([0, 2, 3], [0, 1, 1], [1.0, 2.0, 0.5], ['a', 'b'])

    """
    columns: dict = {}
    indptr, indices, data = [0], [], []
    for event in x:
        for key, value in event.items():
            if type(value) not in (float, int) or not -MAX_INPUT < value < MAX_INPUT:
                return None  # `_check_values` judges it (nan fails the test too)
            indices.append(columns.setdefault(key, len(columns)))
            data.append(value)
        indptr.append(len(indices))
    return CSR(np.array(indptr, np.int64), np.array(indices, np.int64),
               np.array(data, np.float64), None, keys=list(columns))


def jsonl_chunks(path: str):
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
                    yield _dicts_chunk(x, labels, lines, path)

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
    """DataError naming the line and feature of the first value in `x` (one chunk's events,
    read from `lines`) that no model can take (`check_input_value`: a number that is not
    finite, an array or an object), the verdict `river-pa serve` gives the same event.
    Strings, booleans and null stay (a River pipeline may encode them; a river_pa learner
    refuses a string, naming the event). Called only when `dicts_csr` refused the chunk, so
    a numeric chunk pays nothing."""
    for features, line in zip(x, lines):
        for key, value in features.items():
            if type(value) is not str:
                try:
                    check_input_value(key, value)
                except (TypeError, ValueError) as exc:
                    raise DataError(f"{path}:{line}: {exc}") from None


def guarded(chunks, path: str):
    """`chunks` with read errors (unreadable, corrupt compressed data, binary text) as
    DataError naming the file."""
    def read(raw):
        try:
            yield from chunks(raw)
        except (OSError, EOFError, UnicodeDecodeError, lzma.LZMAError) as exc:
            raise DataError(f"{path}: cannot read the file: {exc}") from None

    return read
