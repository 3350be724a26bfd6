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


def test_unsigned_checkpoints_are_announced_and_signed_ones_need_the_key(kafka, elec2_path):
    events, preds = kafka.topics("events", "preds")
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), None), events, None)
    unsigned = kafka.serve_stream(events, None, preds, name="plain")
    kafka.wait_for_report("plain.jsonl", lambda r: r["events"] == N_EVENTS, unsigned)
    assert kafka.stop(unsigned) == 0
    assert "CHECKPOINTS ARE NOT SIGNED" in kafka.log("plain")

    signed = kafka.serve_stream(events, None, preds, "--checkpoint-key", "k", name="signed")
    kafka.wait_for_report("signed.jsonl", lambda r: r["events"] == N_EVENTS, signed)
    assert kafka.stop(signed) == 0
    assert "NOT SIGNED" not in kafka.log("signed")
    # the same checkpoint met by a run without the key: refused, never loaded unchecked
    keyless = kafka.serve_stream(events, None, preds, name="signed")
    assert keyless.wait(timeout=60) == 3
    assert kafka.log("signed").strip().splitlines()[-1].endswith("refusing to load it unverified")
    assert len(kafka.read_all(preds)) == 2 * N_EVENTS
