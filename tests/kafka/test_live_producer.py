"""Events and labels produced while the daemon runs: no label overtakes its event."""

from __future__ import annotations

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 5_000
DELAY = 100


def test_labels_produced_live_never_overtake_their_events(kafka, elec2_path):
    # The daemon is caught up on empty topics when the producer starts. The events partition
    # counted as read up to the high watermark of its last fetch, which lagged far behind while
    # the labels partition was being fetched: 900-4000 of 5000 labels came out as orphans.
    events, labels, preds = kafka.topics("events", "labels", "preds")
    proc = kafka.serve_stream(events, labels, preds, group=f"{events}-g")
    kafka.wait_group(f"{events}-g", 1)
    kafka.wait_for_report("d0.jsonl", lambda r: True, proc)  # polling, assigned, idle
    send_all(kafka.producer(), records(elec2(str(elec2_path), N_EVENTS), DELAY), events, labels)
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["events"] == N_EVENTS
                                   and r["labelled"] + r["orphan_labels"] == N_EVENTS, proc)
    assert kafka.stop(proc) == 0
    assert (report["orphan_labels"], report["labelled"], report["pending"]) == (0, N_EVENTS, 0)
