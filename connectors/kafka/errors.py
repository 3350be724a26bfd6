"""The Kafka client errors the daemon tells apart, named for what they mean to it.

The loop and the roles catch these names, never a client's own classes. This module binds them
to kafka-python's classes, the common currency of both adapters: the confluent-kafka adapter
translates librdkafka's errors into them (kafka/confluent_errors.py `translate`), and a third
client would do the same. kafka-python is therefore installed under either client.
"""

from __future__ import annotations

from kafka import errors as _kafka

__all__ = ["BrokerAway", "ClientError", "ClientTimeout", "FENCED", "IllegalState",
           "ProducerFenced", "RecordTooLarge"]

ClientError = _kafka.KafkaError  # any error of the client: the cluster is unusable (exit 1)
BrokerAway = _kafka.KafkaConnectionError  # no broker answered (a restart, an outage)
ClientTimeout = _kafka.KafkaTimeoutError  # a call not done within its bound (max_block_ms)
# a call on a partition revoked meanwhile (the rebalance runs on the client's IO thread), or a
# transactional call in a state another producer's init_transactions left us in
IllegalState = _kafka.IllegalStateError
ProducerFenced = _kafka.ProducerFencedError  # another producer took our transactional id
FENCED = (ProducerFenced, _kafka.InvalidProducerEpochError)  # that, or our epoch is stale
RecordTooLarge = _kafka.MessageSizeTooLargeError  # over its topic's or the producer's limit
