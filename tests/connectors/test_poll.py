"""`kafka.client.poll`: a poll that meets no broker is an empty poll, not the daemon's end.

kafka-python 3.0.12's group consumer raises KafkaConnectionError from `poll` when the metadata
update its coordinator lookup waits for fails (a broker stopped): CI saw a predictor exit 1 at a
broker's stop (tests/kafka/test_stop_without_broker.py). The failure is a race a real broker
rarely hits, so a consumer that raises as kafka-python did stands in for it here.
"""

from __future__ import annotations

import logging

import pytest
from kafka.errors import KafkaConnectionError, UnknownTopicOrPartitionError

from river_pa.connectors.kafka.client import poll


class Consumer:
    """Polls answer from `answers` in turn: a dict is returned, an exception raised."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.config = {"retry_backoff_ms": 1}

    def poll(self, timeout_ms):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_no_broker_is_an_empty_poll_with_one_warning_per_outage(caplog):
    refused = KafkaConnectionError("111 ECONNREFUSED")
    consumer = Consumer(refused, refused, {"tp": [1]}, refused)
    with caplog.at_level(logging.WARNING, "river_pa.serve"):
        assert [poll(consumer, 0) for _ in range(4)] == [{}, {}, {"tp": [1]}, {}]
    assert [r.getMessage() for r in caplog.records] == [
        "no broker answers (KafkaConnectionError: 111 ECONNREFUSED): polling on until one does",
    ] * 2  # the second outage, after a poll that answered


def test_other_kafka_errors_still_end_the_poll():
    with pytest.raises(UnknownTopicOrPartitionError):
        poll(Consumer(UnknownTopicOrPartitionError("t")), 0)


def test_a_learner_whose_metadata_request_fails_checks_its_partitions_at_the_next_check(caplog):
    """CI saw a learner exit 1 at a broker's restart (test_coordinator_restart): its check for
    new partitions every 10 s asks `topics()`, which raised KafkaConnectionError."""
    from river_pa.connectors.config import ServeConfig
    from river_pa.connectors.roles.learner import Learner
    from river_pa.linear_model import PAClassifier

    class NoBroker:
        def topics(self):
            raise KafkaConnectionError("111 ECONNREFUSED")

    learner = Learner(ServeConfig(model="PAClassifier", role="learn"), PAClassifier())
    learner.consumer, learner.offsets_client, learner.topics = NoBroker(), None, ["ev", "lab"]
    learner.partitions_checked = 0.0
    with caplog.at_level(logging.WARNING, "river_pa.serve"):
        learner._check_membership(set())
    assert learner.partitions_checked > 0.0  # the next check in 10 s
    assert [r.getMessage() for r in caplog.records] == [
        "partitions of ev, lab not checked (KafkaConnectionError: 111 ECONNREFUSED)"]
