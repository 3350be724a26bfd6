"""What a restart restores: a state older than the committed offsets is caught up on (never
skipped), a learner with no state refuses to start empty unless told, a learner without a
labels topic learns events that carry `y`, and bounds and metrics given at a restart apply to
the restored state."""

from __future__ import annotations

import json
import pickle
import time
from collections import Counter

import pytest

from river_pa.connectors.replay import elec2, records, send_all
from tests.kafka.test_end_to_end import river_reference
from tests.kafka.test_learner_failover import DELAY, N_EVENTS, SLOW, learner, setup_stream


def test_a_learner_without_a_labels_topic_learns_events_that_carry_y(kafka, elec2_path):
    # AttributeError: 'NoneType' object has no attribute 'end_offsets' in _log_end, at
    # every start: the learner's end-offsets client was made only with a labels topic.
    rows = elec2(str(elec2_path), N_EVENTS)
    (events,) = kafka.topics("events", partitions=3)
    send_all(kafka.producer(), records(rows, None), events, None)
    proc = kafka.serve_stream(events, None, f"{events}-unused", "--role", "learn", name="a")
    report = kafka.wait_for_report("a.jsonl", lambda r: r["learned"] == N_EVENTS, proc, 240)
    assert kafka.stop(proc) == 0
    assert report["events"] == report["labelled"] == N_EVENTS
    assert report["metrics"]["Accuracy"] == river_reference(rows, None)
