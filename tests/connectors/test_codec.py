"""Decoding and validation of event and label values."""

from __future__ import annotations

import json

import pytest
from river import linear_model

from river_pa.connectors.codec import BadRecord, decode_event, decode_label, encode_json, label_check_for

BINARY = label_check_for(linear_model.PAClassifier())
REGRESSION = label_check_for(linear_model.LinearRegression())


def test_a_good_event_decodes():
    event = decode_event(b'{"id": 7, "x": {"a": 1, "b": -2.5}, "y": true, "ts": 12.0}', BINARY, 100)
    assert (event.id, event.x, event.y, event.ts) == ("7", {"a": 1, "b": -2.5}, True, 12)


@pytest.mark.parametrize("raw,reason", [
    (None, "undecodable"),
    (b"\xff\xfe", "undecodable"),
    (b"{", "invalid_json"),
    (b"[]", "not_an_object"),
    (b'{"x": {}}', "missing_id"),
    (b'{"id": true, "x": {}}', "missing_id"),
    (b'{"id": "a"}', "missing_x"),
    (b'{"id": "a", "x": 3}', "bad_x"),
    (b'{"id": "a", "x": {"f": "1"}}', "non_numeric"),
    (b'{"id": "a", "x": {"f": true}}', "non_numeric"),
    (b'{"id": "a", "x": {"f": NaN}}', "non_finite"),
    (b'{"id": "a", "x": {"f": 1e999}}', "non_finite"),
    (b'{"id": "a", "x": {}, "y": 1}', "bad_label"),
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
    for raw, check in ((b'{"id": "a", "y": true}', REGRESSION), (b'{"id": "a", "y": 1}', BINARY),
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
