"""`kafka.client.fenced_by_state` and `fenced`: a transactional producer whose id another producer took says so
from its own state, whatever error its next call raises. kafka-python 3.0.12 answers the
refused batch with an epoch bump (KIP-360) that the coordinator refuses as fenced; a call
made during the bump raised only "Invalid transition ... BUMPING_PRODUCER_EPOCH", and a fenced
learner exited 1 instead of stepping down (test_a_fenced_learner_steps_down_and_is_elected_again
in a two-worker run)."""

from __future__ import annotations

import pytest
from kafka import KafkaProducer
from kafka.errors import InvalidProducerEpochError, KafkaError, ProducerFencedError

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka.client import fenced, fenced_by_state, make_producer


def test_a_producer_whose_id_was_taken_says_it_is_fenced(kafka):
    (topic,) = kafka.topics("out")
    tid = f"{topic}-txn"
    ours = KafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=tid)
    try:
        ours.init_transactions()
        ours.begin_transaction()
        ours.send(topic, b"before").get(timeout=30)
        assert not fenced_by_state(ours, 0)
        intruder = KafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=tid)
        intruder.init_transactions()  # bumps the epoch: ours is fenced
        intruder.close()
        ours.send(topic, b"after")  # refused for its epoch; the error lands in the state
        ours.flush(timeout=30)
        assert fenced_by_state(ours, 30)
        # the next transactional call names the fencing in its text only: fenced() reads the
        # producer's state instead (a learner fenced so steps down rather than exit 1)
        with pytest.raises(KafkaError, match="ProducerFencedError") as raised:
            ours.begin_transaction()
        assert not isinstance(raised.value.__cause__, ProducerFencedError)
        assert fenced(raised.value, ours, 30)
        assert not fenced(raised.value, None, 0)  # its text alone says nothing
    finally:
        ours.close(timeout=5)


def test_a_producer_that_is_not_transactional_is_never_fenced(kafka):
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap)
    try:
        assert not fenced_by_state(producer, 0)
        assert not fenced_by_state(None, 0)
    finally:
        producer.close()


def test_a_fenced_producer_leaves_the_id_to_the_producer_that_took_it(kafka):
    """A batch refused for a stale epoch fences the producer: it neither bumps its epoch nor
    asks for a fresh producer id. kafka-python 3.0.12 does both by itself (KIP-360); the
    coordinator took the zombie's bump for a retry of the new producer's, or its fresh id for a
    new instance, and fenced the producer that had taken the id: a learner woken from a pause
    deposed the one elected meanwhile (test_a_zombie_learner_steps_down_and_writes_nothing)."""
    (topic,) = kafka.topics("out")
    cfg = ServeConfig(bootstrap_servers=kafka.bootstrap, exactly_once=True,
                      transactional_id=f"{topic}-txn")
    ours = make_producer(cfg)
    intruder = None
    try:
        ours.init_transactions()
        ours.begin_transaction()
        ours.send(topic, b"zombie").get(timeout=30)  # the partition is in ours' transaction
        intruder = make_producer(cfg)
        intruder.init_transactions()  # ours' transaction aborted, its epoch stale
        with pytest.raises(InvalidProducerEpochError):
            ours.send(topic, b"stale").get(timeout=30)  # produced straight to the partition
        # fenced by the refused batch itself, not by a bump the coordinator refused
        assert isinstance(ours._transaction_manager.last_error, InvalidProducerEpochError)
        assert fenced_by_state(ours, 0)
        intruder.begin_transaction()
        intruder.send(topic, b"elected").get(timeout=30)
        intruder.commit_transaction()  # raised ProducerFencedError when ours took the id back
        assert [r.value for r in kafka.read_all(topic, committed_only=True)] == [b"elected"]
    finally:
        ours.close(timeout=5)
        if intruder is not None:
            intruder.close(timeout=5)
