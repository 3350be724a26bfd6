"""Decoding and validation of event and label values."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import linear_model

import river_pa

from river_pa.connectors.codec import (
    MAX_DEPTH, REASONS, BadRecord, Event, decode_event, decode_events, decode_label, encode_json,
    label_check_for,
)

BINARY = label_check_for(linear_model.PAClassifier())
REGRESSION = label_check_for(linear_model.LinearRegression())


def test_a_good_event_decodes():
    event = decode_event(b'{"id": 7, "x": {"a": 1, "b": -2.5}, "y": true, "ts": 12.0}', BINARY, 100)
    assert (event.id, event.x, event.y, event.ts) == ("7", {"a": 1, "b": -2.5}, True, 12)


def test_strings_booleans_and_null_reach_the_model_which_decides():
    """A River pipeline takes them (OneHotEncoder, StatImputer); `evaluate` passes them too."""
    event = decode_event(b'{"id": 1, "x": {"country": "FR", "new": true, "age": null, "n": 2, '
                         b'"tags": ["a", 1]}}', BINARY, 200)
    assert event.x == {"country": "FR", "new": True, "age": None, "n": 2, "tags": ["a", 1]}


def test_a_nested_value_is_refused_with_the_message_evaluate_gives():
    from river_pa._core.validation import check_input_value

    with pytest.raises(BadRecord) as info:
        decode_event(b'{"id": 1, "x": {"tags": {"a": "b"}}}', BINARY, 200)
    with pytest.raises(TypeError) as policy:
        check_input_value("tags", {"a": "b"})
    assert info.value.reason == "bad_value" and info.value.detail == str(policy.value)
    assert info.value.detail == (
        "feature 'tags' has a value of type dict ({'a': 'b'}): a feature value is a number, a "
        "string, true/false, null or a list of numbers, strings and true/false")


@pytest.mark.parametrize("raw,reason", [
    (None, "undecodable"),
    (b"\xff\xfe", "undecodable"),
    (b"{", "invalid_json"),
    (b"[]", "not_an_object"),
    (b'{"x": {}}', "missing_id"),
    (b'{"id": true, "x": {}}', "missing_id"),
    (b'{"id": "a"}', "missing_x"),
    (b'{"id": "a", "x": 3}', "bad_x"),
    (b'{"id": "a", "x": {"f": [[1]]}}', "bad_value"),
    (b'{"id": "a", "x": {"f": [1, null]}}', "bad_value"),
    (b'{"id": "a", "x": {"f": {"g": 1}}}', "bad_value"),
    (b'{"id": "a", "x": {"f": NaN}}', "non_finite"),
    (b'{"id": "a", "x": {"f": 1e999}}', "non_finite"),
    (b'{"id": "a", "x": {}, "y": 2}', "bad_label"),
    (b'{"id": "a", "x": {}, "y": 0.5}', "bad_label"),
    (b'{"id": "a", "x": {}, "ts": "now"}', "bad_ts"),
    # an int beyond 64 bits crashed the daemon in encode_json, at the same record on restart
    (b'{"id": "a", "x": {}, "ts": 1e300}', "bad_ts"),
    (b'{"id": "a", "x": {}, "ts": 9223372036854775808}', "bad_ts"),
    (b'{"id": "a", "x": {"f": 1.0}, "pad": "' + b"z" * 200 + b'"}', "oversize"),
])
def test_bad_events_name_their_reason(raw, reason):
    with pytest.raises(BadRecord) as info:
        decode_event(raw, BINARY, 100)
    assert info.value.reason == reason


def test_labels_follow_the_model_kind():
    assert decode_label(b'{"id": "a", "y": 2.5}', REGRESSION, 100).y == 2.5
    for raw, check in ((b'{"id": "a", "y": true}', REGRESSION), (b'{"id": "a", "y": 2}', BINARY),
                       (b'{"id": "a"}', BINARY)):
        with pytest.raises(BadRecord, match="bad_label"):
            decode_label(raw, check, 100)


def test_an_integer_beyond_a_double_is_non_finite_not_invalid_json():
    with pytest.raises(BadRecord) as info:
        decode_event(b'{"id": "a", "x": {"f": 1' + b"0" * 400 + b"}}", BINARY, 1000)
    assert info.value.reason == "non_finite"


def test_every_accepted_timestamp_can_be_echoed_in_a_prediction():
    for ts in (b"-9223372036854775808", b"9223372036854775807", b"1.7e12"):
        event = decode_event(b'{"id": "a", "x": {}, "ts": ' + ts + b"}", BINARY, 100)
        assert json.loads(encode_json({"event_ts": event.ts}))["event_ts"] == event.ts


def test_encode_json_never_writes_invalid_json():
    assert json.loads(encode_json({"p": {"a": float("nan")}, "q": 1.5})) == {"p": {"a": None}, "q": 1.5}


@pytest.mark.parametrize("y,expected", [(1, True), (0, False), (-1, False), (1.0, True), (True, True)])
def test_binary_labels_are_the_ones_pa_classifier_takes(y, expected):
    # {"y": 1} and {"y": 0} were dead-lettered as bad_label, although learn_one takes them
    raw = json.dumps({"id": "a", "y": y}).encode()
    label = decode_label(raw, label_check_for(river_pa.PAClassifier()), 100)
    assert label.y is expected


def nested(depth: int, open_: bytes = b"[", close: bytes = b"]") -> bytes:
    return open_ * depth + close * depth


DEEP = nested(5000)
SHALLOW = b"[" + b"[1], " * 100 + b"{}]"  # more brackets than MAX_DEPTH, two levels deep


@pytest.mark.parametrize("raw", [
    # orjson 3.8 parses any depth, newer releases refuse more than 1,024 levels (with messages
    # that change between releases) and the standard-library fallback overflows the stack: the
    # reason was invalid_json, bad_label, bad_ts or non_numeric depending on orjson's release
    b'{"id": "a", "x": {"f": ' + DEEP + b"}} trailing",
    b'{"id": "a", "x": {"f": ' + DEEP[:5000] + b"NaN" + DEEP[5000:] + b"}}",
    b"[" * 100_000,
    b'{"id": "a", "x": {}, "y": ' + DEEP + b"}",
    b'{"id": "a", "x": {}, "ts": ' + DEEP + b"}",
    b'{"id": "a", "x": {"f": ' + DEEP + b"}}",
    b'{"id": "a", "x": {"f": ' + nested(1025, b'{"a":', b"}") + b"}}",
    # one level past the limit, alone or among 200 shallow brackets
    b'{"id": "a", "x": {}, "y": ' + nested(MAX_DEPTH) + b"}",
    b'{"id": "a", "x": {}, "z": ' + SHALLOW + b', "y": ' + nested(MAX_DEPTH) + b"}",
])
def test_deeply_nested_json_is_a_bad_record_not_an_exception(raw):
    for decode in (decode_event, decode_label):
        with pytest.raises(BadRecord) as info:
            decode(raw, BINARY, len(raw))
        assert info.value.reason == "too_deep"
        assert str(info.value) == (
            f"too_deep: arrays and objects nested more than {MAX_DEPTH} levels")


@pytest.mark.parametrize("raw,event_reason,label_reason", [
    # MAX_DEPTH levels in all (the record's object is the first) are parsed and judged as usual
    (b'{"id": "a", "x": {}, "y": ' + nested(MAX_DEPTH - 1) + b"}", "bad_label", "bad_label"),
    (b'{"id": "a", "x": {}, "z": ' + SHALLOW + b', "y": ' + nested(MAX_DEPTH - 1) + b"}",
     "bad_label", "bad_label"),
    (b'{"id": "a", "x": {}, "ts": ' + nested(MAX_DEPTH - 1) + b"}", "bad_ts", "bad_label"),
    (b'{"id": "a", "x": {"f": ' + nested(MAX_DEPTH - 2) + b"}}", "bad_value", "bad_label"),
    (b'{"id": "a", "x": {"f": ' + nested(MAX_DEPTH - 2) + b"}} trailing",
     "invalid_json", "invalid_json"),
])
def test_nesting_up_to_the_limit_is_judged_by_its_content(raw, event_reason, label_reason):
    for decode, reason in ((decode_event, event_reason), (decode_label, label_reason)):
        with pytest.raises(BadRecord) as info:
            decode(raw, BINARY, len(raw))
        assert info.value.reason == reason
        assert len(str(info.value)) < 200  # the detail header quotes a preview, not the value


def test_brackets_inside_strings_are_not_nesting():
    text = '[{\\"[' * 1000  # escaped quotes and backslashes included
    raw = orjson.dumps({"id": "a", "x": {"f": 1}, "y": True, "note": text, text: [[1]]})
    assert decode_event(raw, BINARY, len(raw)) == Event("a", {"f": 1}, True)
    unterminated = b'{"id": "a", "x": {"f": 1}, "note": "' + b"[" * 1000
    with pytest.raises(BadRecord) as info:
        decode_event(unterminated, BINARY, len(unterminated))
    assert info.value.reason == "invalid_json"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(st.sampled_from(["id", "x", "y", "ts", "z"]), JSON, max_size=5),
       cut=st.integers(0, 200))
def test_any_value_decodes_or_is_a_bad_record(value, cut):
    raw = json.dumps(value).encode()
    for data in (raw, raw[:cut]):
        for decode in (decode_event, decode_label):
            for check in (BINARY, REGRESSION, label_check_for(river_pa.PAMultiClassifier())):
                try:
                    decode(data, check, 10_000)
                except BadRecord as exc:
                    assert exc.reason in REASONS


def test_a_null_y_is_an_unlabelled_event_but_a_bad_label():
    # README: "y": null on the events topic is no label; on the labels topic a dead letter
    check = label_check_for(river_pa.PAClassifier())
    assert decode_event(b'{"id": "a", "x": {"f": 1}, "y": null}', check, 100).y is None
    with pytest.raises(BadRecord, match="missing y") as exc:
        decode_label(b'{"id": "a", "y": null}', check, 100)
    assert exc.value.reason == "bad_label"


@pytest.mark.parametrize("text,reason", [
    ("NaN", "non_finite"), ("-Infinity", "non_finite"), ("1e400", "non_finite"),
    ("1e308", "out_of_range"), ("-2e150", "out_of_range"), ('{"b": 1}', "bad_value"),
    ('[["a"]]', "bad_value"),
])
def test_serve_refuses_a_feature_value_with_evaluates_message(text, reason):
    """The dead letter's detail is the message `river-pa evaluate` gives the same value of the
    same line (check_input_value), naming the feature; a finite 1e308 is refused before a
    River StandardScaler's variance overflows on it (a new user's pipeline then refused every
    later event)."""
    from river_pa._core.validation import check_input_value

    with pytest.raises(BadRecord) as served:
        decode_event(b'{"id": 1, "x": {"salary": ' + text.encode() + b"}}", BINARY, 200)
    with pytest.raises((TypeError, ValueError)) as evaluated:
        check_input_value("salary", json.loads(text))
    assert (served.value.reason, served.value.detail) == (reason, str(evaluated.value))
    assert "'salary'" in served.value.detail


def test_a_lone_surrogate_is_undecodable_not_a_crash_when_echoed():
    with pytest.raises(BadRecord) as info:
        decode_event(b'{"id": "\\ud800", "x": {"f": NaN}}', BINARY, 200)
    assert info.value.reason == "undecodable"


def _decoded(raw):
    try:
        event = decode_event(raw, BINARY, 200)
    except BadRecord as exc:
        return ("bad", exc.reason, exc.detail)
    return ("event", event.id, repr(event.x), event.y, event.ts)


_VALUES = st.one_of(st.floats(), st.integers(-2**65, 2**65), st.text(max_size=2), st.booleans(),
                   st.none(), st.lists(st.integers(), max_size=2))
_EVENTS = st.builds(  # near the common event: every field of the right kind, or nearly
    lambda rid, x, ts, y: json.dumps({"id": rid, "x": x, **ts, **y}).encode(),
    st.one_of(st.text(max_size=3), st.integers(), st.booleans()),
    st.dictionaries(st.text(max_size=2), st.one_of(st.floats(allow_nan=False), st.integers(
        -2**64, 2**64)) | _VALUES, max_size=4),
    st.fixed_dictionaries({}, optional={"ts": st.one_of(st.integers(-2**64, 2**64),
                                                        st.floats(), st.booleans(), st.none())}),
    st.fixed_dictionaries({}, optional={"y": st.one_of(st.booleans(), st.none(), st.text())}))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    _EVENTS,
    st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
        st.sampled_from(["id", "x", "y", "ts", "z"]),
        st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                  st.text(max_size=3), st.dictionaries(st.text(max_size=2), st.one_of(
                      st.floats(), st.integers(-2**65, 2**65), st.text(max_size=2),
                      st.booleans(), st.none(), st.lists(st.integers(), max_size=2)),
                      max_size=4)))),
    st.sampled_from([None, b"", b"[1]", b'{"id": "a", "x": {"v": NaN}}', b"\xff", b"{" * 70,
                     b'{"id": "a", "x": {"v": 1e400}}', b'{"id": "a", "x": {}, "pad": "' +
                     b"p" * 300 + b'"}', b'{"id": "a", "x": {"k": [[[[1]]]]}}',
                     b'{"id": "a", "x": {"v": 1e200}}', b'{"id": "a", "x": {"v": -1e150}}',
                     b'{"id": "a", "x": {"v": 1}, "ts": 9223372036854775808}',
                     b'{"id": "a", "x": {"v": 1}, "ts": -9223372036854775808}'])), max_size=12))
def test_a_poll_decodes_as_each_of_its_records(raws):
    """`decode_events` (one step for the common event) gives each record's Event or the
    BadRecord `decode_event` gives, reason and detail alike."""
    got = [("bad", e.reason, e.detail) if isinstance(e, BadRecord) else
           ("event", e.id, repr(e.x), e.y, e.ts) for e in decode_events(raws, BINARY, 200)]
    assert got == [_decoded(raw) for raw in raws]
