"""The choice of Kafka client and, for confluent-kafka (librdkafka), the `[kafka]` settings
translated and the serve settings it runs. Imports no client library: the settings are checked
at start, before any client exists.

`[kafka]` takes kafka-python's names under both clients (one configuration file whichever
client runs it). With `--kafka-client confluent` each name of `LIBRDKAFKA_NAMES` becomes the
librdkafka property it names (`sasl_plain_username` -> `sasl.username`, `ssl_cafile` ->
`ssl.ca.location`, ...), given to the consumers, the producer or both (`CONSUMER_ONLY`,
`PRODUCER_ONLY`); a kafka-python setting with no librdkafka counterpart (`api_version`,
`ssl_context`, ...) is refused naming it. `max_block_ms` is the daemon's own bound on a flush
and on each transactional call, `bootstrap_timeout_ms` on the first metadata request of each
consumer, under both clients.
"""

from __future__ import annotations

import importlib.util

from river_pa.connectors.errors import SettingsConflict
from river_pa.connectors.kafka import CLIENTS

__all__ = ["CONSUMER_ONLY", "LIBRDKAFKA_NAMES", "PRODUCER_ONLY", "check_client_choice",
           "librdkafka_settings"]

LIBRDKAFKA_NAMES = {
    "security_protocol": "security.protocol", "sasl_mechanism": "sasl.mechanism",
    "sasl_plain_username": "sasl.username", "sasl_plain_password": "sasl.password",
    "sasl_kerberos_service_name": "sasl.kerberos.service.name",
    "ssl_cafile": "ssl.ca.location", "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location", "ssl_password": "ssl.key.password",
    "ssl_crlfile": "ssl.crl.location", "ssl_ciphers": "ssl.cipher.suites",
    "ssl_check_hostname": "ssl.endpoint.identification.algorithm",
    "request_timeout_ms": "socket.timeout.ms", "reconnect_backoff_ms": "reconnect.backoff.ms",
    "reconnect_backoff_max_ms": "reconnect.backoff.max.ms", "retry_backoff_ms": "retry.backoff.ms",
    "metadata_max_age_ms": "metadata.max.age.ms",
    "connections_max_idle_ms": "connections.max.idle.ms", "client_rack": "client.rack",
    "receive_buffer_bytes": "socket.receive.buffer.bytes",
    "send_buffer_bytes": "socket.send.buffer.bytes",
    "max_poll_interval_ms": "max.poll.interval.ms",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
    "fetch_min_bytes": "fetch.min.bytes", "fetch_max_wait_ms": "fetch.wait.max.ms",
    "fetch_max_bytes": "fetch.max.bytes", "max_partition_fetch_bytes": "max.partition.fetch.bytes",
    "check_crcs": "check.crcs", "linger_ms": "linger.ms", "batch_size": "batch.size",
    "compression_type": "compression.type", "acks": "acks", "retries": "retries",
    "delivery_timeout_ms": "message.timeout.ms",
    "max_in_flight_requests_per_connection": "max.in.flight",
    "transaction_timeout_ms": "transaction.timeout.ms", "max_request_size": "message.max.bytes",
}
CONSUMER_ONLY = frozenset({"max_poll_interval_ms", "heartbeat_interval_ms", "fetch_min_bytes",
                           "fetch_max_wait_ms", "fetch_max_bytes", "max_partition_fetch_bytes",
                           "check_crcs"})
PRODUCER_ONLY = frozenset({"linger_ms", "batch_size", "compression_type", "acks", "retries",
                           "delivery_timeout_ms", "max_in_flight_requests_per_connection",
                           "transaction_timeout_ms", "max_request_size"})
DAEMON_OWN = frozenset({"max_block_ms", "bootstrap_timeout_ms"})  # the daemon's own bounds


def _value(name: str, value):
    """kafka-python's value of `name` as librdkafka takes it."""
    if name == "ssl_check_hostname":
        return "https" if value else "none"
    if name == "compression_type" and value is None:
        return "none"
    return value


def librdkafka_settings(settings: dict, consumer: bool) -> dict:
    """The `[kafka]` `settings` (kafka-python's names, checked by `check_client_choice`) as
    librdkafka properties for a consumer (`consumer`) or the producer.

    >>> librdkafka_settings({"sasl_plain_username": "u", "linger_ms": 5}, consumer=True)
    {'sasl.username': 'u'}
    >>> librdkafka_settings({"ssl_check_hostname": False, "linger_ms": 5}, consumer=False)
    {'ssl.endpoint.identification.algorithm': 'none', 'linger.ms': 5}
    """
    skip = PRODUCER_ONLY if consumer else CONSUMER_ONLY
    return {LIBRDKAFKA_NAMES[k]: _value(k, v) for k, v in settings.items()
            if k in LIBRDKAFKA_NAMES and k not in skip}


def check_client_choice(cfg) -> None:
    """Refuse a `cfg.kafka_client` that is not one of `CLIENTS` (SystemExit), and with
    "confluent": confluent-kafka not installed, a `[kafka]` setting librdkafka has no name
    for (SettingsConflict, status 2).

    >>> from river_pa.connectors.config import ServeConfig
    >>> try:
    ...     check_client_choice(ServeConfig(kafka_client="confluent", kafka={"api_version": "3.9"}))
    ... except SettingsConflict as exc:
    ...     print("['api_version']" in str(exc), "with --kafka-client confluent" in str(exc))
    True True
    """
    if cfg.kafka_client not in CLIENTS:
        raise SystemExit(f"river-pa serve: kafka_client must be one of {', '.join(CLIENTS)}, "
                         f"got {cfg.kafka_client!r:.60}")
    if cfg.kafka_client == "kafka-python":
        return
    unmapped = sorted(set(cfg.kafka) - set(LIBRDKAFKA_NAMES) - DAEMON_OWN)
    if unmapped:
        raise SettingsConflict(
            f"river-pa serve: Kafka client settings {unmapped} (from [kafka], --kafka or "
            "RIVER_PA_KAFKA_*) have no librdkafka counterpart: not taken with --kafka-client "
            f"confluent; it takes: {', '.join(sorted(LIBRDKAFKA_NAMES))}")
    if importlib.util.find_spec("confluent_kafka") is None:
        raise SettingsConflict(
            "river-pa serve: --kafka-client confluent needs confluent-kafka: "
            "pip install \"river-pa[confluent]\" (or leave --kafka-client at kafka-python)")
