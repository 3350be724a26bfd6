"""Decode and validate Kafka record values; encode the daemon's outputs.

Every check lives here, so a record is validated once, in the loop, and the rest of the
daemon only sees clean `Event` and `Label` values. A bad record raises `BadRecord` with a
short machine-readable reason that becomes the dead-letter `reason` header. Arrays and
objects nested more than `MAX_DEPTH` levels are `too_deep` whatever the JSON parser's version.

"""

from __future__ import annotations

import functools
import json
import math
import re
import reprlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import orjson

from river_pa._core.validation import (
    MAX_INPUT, OutOfRangeError, TooManyClassesError, check_input_value,
)
from river_pa.connectors.errors import BadRecordError

__all__ = [
    "BadRecord", "Event", "Label", "TooManyClassesError", "decode_event", "decode_events",
    "decode_label", "encode_json", "label_check_for",
]

REASONS = (
    "oversize", "too_deep", "undecodable", "invalid_json", "not_an_object", "missing_id",
    "missing_x", "bad_x", "bad_value", "non_finite", "out_of_range", "bad_label", "bad_ts",
    "label_rejected", "too_many_classes", "too_many_features", "feature_rejected", "model_error",
    "output_rejected",
)


# Error details quote record values through reprlib: it cuts long strings and deep nesting
# (a plain repr of a label nested 1,000 levels deep raised RecursionError out of the loop).
_PREVIEW = reprlib.Repr()  # keyword arguments only from Python 3.12
_PREVIEW.maxlevel, _PREVIEW.maxstring, _PREVIEW.maxother = 3, 40, 40


def _preview(value) -> str:
    return _PREVIEW.repr(value)


class BadRecord(BadRecordError):
    """A record the daemon cannot use; `reason` is one of `REASONS`."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(slots=True)
class Event:
    """A validated event: features, an optional label and an optional epoch-ms timestamp."""

    id: str
    x: dict  # numbers, strings, booleans, None, flat lists: the model decides
    y: Any = None
    ts: int | None = None


@dataclass(slots=True)
class Label:
    """A validated late label for the event with the same id."""

    id: str
    y: Any


def label_check_for(model) -> Callable[[Any], Any]:
    """A function that returns a label the model can learn from, or raises BadRecord.

    Regressors take finite numbers (not booleans); binary classifiers take booleans;
    multiclass classifiers take booleans, integers or strings.
    """
    if _is_regressor(model):
        return _regression_label
    if getattr(model, "_multiclass", False):
        return _multiclass_label
    return _binary_label


def _is_regressor(model) -> bool:
    from river import base

    return isinstance(model, base.Regressor)


def _regression_label(y):
    if isinstance(y, bool) or not isinstance(y, (int, float)):
        raise BadRecord("bad_label", f"a regressor needs a number, got {_preview(y)}")
    if not -MAX_INPUT < y < MAX_INPUT:  # nan fails too
        raise BadRecord("bad_label", f"label {_preview(y)} is not a finite number below 1e150")
    return float(y)


def _binary_label(y):
    """True/False, or the numbers PAClassifier.learn_one takes (1 -> True; 0 and -1 -> False)."""
    from river_pa.linear_model.pa import encode_binary_label

    if isinstance(y, bool):
        return y
    if isinstance(y, (int, float)):
        try:
            return encode_binary_label(y) > 0
        except ValueError:
            pass
    raise BadRecord("bad_label",
                    f"a binary classifier needs true/false, 1/0 or 1/-1, got {_preview(y)}")


def _multiclass_label(y):
    if isinstance(y, float) or not isinstance(y, (bool, int, str)):
        raise BadRecord("bad_label", f"a classifier needs a bool, int or string, got {_preview(y)}")
    return y


def _parse_int(token: str) -> int | float:
    """An integer literal as orjson reads it: a double beyond 64 bits; one too large for a
    double is refused like 1e999 (what made orjson's fast parse fail)."""
    value = int(token)
    if -2**63 <= value < 2**64:
        return value
    try:
        return float(value)
    except OverflowError:
        raise BadRecord("non_finite", "a number overflows a double") from None


# The daemon's own nesting limit, checked before any parser runs: orjson's (1,024 levels in
# recent releases, none in 3.8) and its error message change across releases, and the standard
# library's fallback overflows the stack first, so a deep record's reason depended on both.
MAX_DEPTH = 64
# A JSON string, or an unterminated one up to the end (always matching keeps the scan linear).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as int8
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[{]}")))


def _check_depth(raw: bytes) -> None:
    """Raise BadRecord("too_deep") for arrays and objects nested more than MAX_DEPTH levels.

    Hand-written: neither orjson nor the json module takes a depth limit. A record with at
    most MAX_DEPTH brackets (every ordinary event) costs two byte counts; any other has its
    strings cut out and the running depth of the brackets left computed by numpy.
    """
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    steps = _STRING.sub(b"", raw).translate(_BRACKET_STEP, _NOT_BRACKETS)
    depth = np.cumsum(np.frombuffer(steps, np.int8), dtype=np.int64).max(initial=0)
    if depth > MAX_DEPTH:
        raise BadRecord("too_deep", f"arrays and objects nested more than {MAX_DEPTH} levels")


def _load_object(raw: bytes | None, max_bytes: int) -> dict:
    if raw is None:
        raise BadRecord("undecodable", "null value (tombstone)")
    if len(raw) > max_bytes:
        raise BadRecord("oversize", f"{len(raw)} bytes > {max_bytes}")
    _check_depth(raw)
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        obj = _lenient(raw, exc)
    if not isinstance(obj, dict):
        raise BadRecord("not_an_object", type(obj).__name__)
    return obj


def _lenient(raw: bytes, error: Exception):
    """The value of a record the strict (fast) parser refused, read as `river-pa evaluate`
    reads a line (NaN, Infinity and 1e400 are numbers, so the checks of the fields name the
    one that holds them, as evaluate does), or BadRecord: bytes that are not UTF-8, a string
    the daemon could not write back (a lone surrogate), an integer that overflows a double, or
    broken JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord("undecodable", str(exc)) from None
    try:
        obj = json.loads(text, parse_int=_parse_int)
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except BadRecord:  # `_parse_int`'s
        raise
    except UnicodeEncodeError as exc:
        raise BadRecord("undecodable", f"a string the daemon cannot write back: {exc}") from None
    except ValueError as exc:  # JSONDecodeError, an integer of more than 4,300 digits
        raise BadRecord("invalid_json", str(exc) or str(error)) from None
    return obj


def _record_id(obj: dict) -> str:
    rid = obj.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
        raise BadRecord("missing_id")
    return str(rid)


def _features(obj: dict) -> dict:
    if "x" not in obj:
        raise BadRecord("missing_x")
    x = obj["x"]
    if not isinstance(x, dict):
        raise BadRecord("bad_x", f"x is a {type(x).__name__}, not an object")
    for key, value in x.items():
        kind = type(value)  # exact types first (a bool is its own type): half the cost of the
        # checks below per feature
        if (kind is float or kind is int) and -MAX_INPUT < value < MAX_INPUT or kind is str:
            continue
        try:  # the model decides what it takes of the rest (evaluate's verdict, the same policy)
            check_input_value(key, value)
        except TypeError as exc:  # the message is cut to 500 characters by the dead letter's
            raise BadRecord("bad_value", str(exc)) from None  # header
        except OutOfRangeError as exc:
            raise BadRecord("out_of_range", str(exc)) from None
        except ValueError as exc:
            raise BadRecord("non_finite", str(exc)) from None
    return x


def _timestamp(obj: dict) -> int | None:
    ts = obj.get("ts")
    if ts is None:
        return None
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise BadRecord("bad_ts", f"{_preview(ts)}")
    if not -2**63 <= ts < 2**63:  # event_ts is echoed in the prediction; orjson writes int64 only
        raise BadRecord("bad_ts", f"{_preview(ts)} is outside the 64-bit range of epoch ms")
    return int(ts)


def _only_bad_records(decode):
    """No exception but BadRecord leaves a decoder: one record must never stop the daemon
    (and stop it again at the same offset on every restart)."""
    @functools.wraps(decode)
    def guarded(raw, check_label, max_bytes):
        try:
            return decode(raw, check_label, max_bytes)
        except BadRecord:
            raise
        except Exception as exc:  # a decoder path not thought of: still a dead letter
            raise BadRecord("undecodable", f"{type(exc).__name__}: {exc}") from None
    return guarded


@_only_bad_records
def decode_event(raw: bytes | None, check_label: Callable, max_bytes: int) -> Event:
    """Parse an event value `{"id", "x", "y"?, "ts"?}` or raise BadRecord."""
    obj = _load_object(raw, max_bytes)
    y = obj.get("y")
    return Event(
        id=_record_id(obj),
        x=_features(obj),
        y=None if y is None else check_label(y),
        ts=_timestamp(obj),
    )


def decode_events(raws: list, check_label: Callable, max_bytes: int) -> list:
    """`decode_event` of each value of `raws` (a poll's), in order: its Event, or the
    BadRecord it raised in its place.

    The common event (a string id, numbers and strings within range in x, no label, an
    integer ts or none, at most MAX_DEPTH brackets) is taken in one step from orjson's
    object; any other goes through `decode_event`, which gives its Event or reason.

    >>> [type(e).__name__ for e in decode_events([b'{"id": 1, "x": {}}', b"[]"], None, 100)]
    ['Event', 'BadRecord']
    """
    decoded, loads = [], orjson.loads
    for raw in raws:
        try:
            if (raw.__class__ is bytes and len(raw) <= max_bytes
                    and raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH):
                obj = loads(raw)
                rid, x, ts = obj.get("id"), obj.get("x"), obj.get("ts")
                if (rid.__class__ is str and rid and x.__class__ is dict and _plain(x)
                        and obj.get("y") is None
                        and (ts is None or ts.__class__ is int and -2**63 <= ts < 2**63)):
                    decoded.append(Event(rid, x, None, ts))
                    continue
        except Exception:  # not JSON, not an object, ...: `decode_event` tells why
            pass
        try:
            decoded.append(decode_event(raw, check_label, max_bytes))
        except BadRecord as exc:
            decoded.append(exc)
    return decoded


def _plain(x: dict) -> bool:
    """Whether every value of `x` passes `_features` at its first test."""
    for value in x.values():
        kind = value.__class__
        if not ((kind is float or kind is int) and -MAX_INPUT < value < MAX_INPUT
                or kind is str):
            return False
    return True


@_only_bad_records
def decode_label(raw: bytes | None, check_label: Callable, max_bytes: int) -> Label:
    """Parse a label value `{"id", "y"}` or raise BadRecord."""
    obj = _load_object(raw, max_bytes)
    rid = _record_id(obj)
    if obj.get("y") is None:
        raise BadRecord("bad_label", "missing y")
    return Label(id=rid, y=check_label(obj["y"]))


def encode_json(value: dict) -> bytes:
    """Compact UTF-8 JSON; non-finite floats become null rather than invalid JSON."""
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
