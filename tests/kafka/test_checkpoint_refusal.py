"""A daemon refuses a checkpoint signed with another key, before unpickling it."""

from __future__ import annotations

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 50


def test_restart_with_another_key_is_refused(kafka, elec2_path):
    events, preds = kafka.topics("events", "preds")
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), None), events, None)
    first = kafka.serve_stream(events, None, preds, "--checkpoint-key", "key-one")
    kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == N_EVENTS, first)
    assert kafka.stop(first) == 0

    second = kafka.serve_stream(events, None, preds, "--checkpoint-key", "key-two")
    assert second.wait(timeout=60) == 3
    assert "HMAC does not verify" in kafka.log("d0")
    assert len(kafka.read_all(preds)) == N_EVENTS  # the refused daemon predicted nothing
