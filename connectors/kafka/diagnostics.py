"""What the daemon says about the cluster: kafka-python muted while the clients connect and
for normal operation (its warnings about a coordinator moving, a topic being created...), a
plain TCP check of the bootstrap addresses, and one line explaining why the cluster is
unusable (for the exit message)."""

from __future__ import annotations

import contextlib
import logging
import socket

from kafka import errors as kafka_errors

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.errors import OutputError

__all__ = ["explain", "quiet_bootstrap", "quiet_normal_operation", "unreachable"]


@contextlib.contextmanager
def quiet_bootstrap():
    """Mute kafka-python while the clients connect: it logs each failed attempt (60 lines for a
    wrong password), and `explain` states the cause in one line."""
    logger = logging.getLogger("kafka")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def unreachable(cfg: ServeConfig, timeout_s: float = 3.0) -> str | None:
    """"no broker at ..." if no bootstrap address accepts a TCP connection, else None.

    A plain connection per address, at most `timeout_s` each: kafka-python would retry for
    `bootstrap_timeout_ms` (10 s) before saying it could not bootstrap.
    """
    errors = []
    for address in (a.strip() for a in cfg.bootstrap_servers.split(",")):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
            return None
        except (OSError, ValueError) as err:
            reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
            errors.append(f"{address} ({reason})")
    return "no broker at " + ", ".join(errors)


# kafka-python messages about normal operation, by logger: (start of the message template,
# text the formatted message or its logged exception must contain); anything else, real errors
# included, is kept
_COORDINATOR_MOVED = [("", "NotCoordinator"), ("", "CoordinatorNotAvailable"),
                      ("", "CoordinatorLoadInProgress")]
_NORMAL_OPERATION = {
    "kafka.net.selector": [("Task ", "threshold). It is blocking")],  # a step over 0.1 s on a busy machine
    # the group coordinator not ready yet (first start) or moved: kafka-python retries
    "kafka.coordinator": _COORDINATOR_MOVED,
    "kafka.coordinator.consumer": _COORDINATOR_MOVED,
    "kafka.coordinator.heartbeat": [*_COORDINATOR_MOVED,
                                    ("Heartbeat failed for group %s: coordinator", "")],
    "kafka.coordinator.assignors.range": [("No partition metadata for topic", "")],  # being created
    "kafka.coordinator.assignors.roundrobin": [("No partition metadata for topic", "")],
    "kafka.coordinator.assignors.sticky.sticky_assignor": [("No partition metadata for topic", "")],
    "kafka.cluster": [("Topic %s not found in cluster metadata", ""),  # an output's first send
                      ("Metadata refresh: failed", "Cancelled")],  # at close
    # kafka-python 3.0.12 at close: its network thread uses a socket close() just set to None
    # (a traceback in CI after a daemon's one-line exit)
    "kafka.net.transport": [("%s: Error receiving network data",
                             "'NoneType' object has no attribute 'recv'"),
                            ("%s: Error sending request data",
                             "'NoneType' object has no attribute 'send'")],
}


class _Normal(logging.Filter):
    def __init__(self, patterns: list):
        super().__init__()
        self.patterns = patterns

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        said = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            said += f" {record.exc_info[1]}"
        return not any(msg.startswith(start) and text in said for start, text in self.patterns)


_FILTERS = {name: _Normal(patterns) for name, patterns in _NORMAL_OPERATION.items()}


def quiet_normal_operation() -> None:
    """Drop kafka-python's warnings about normal operation (`_NORMAL_OPERATION`) from the log
    (idempotent: a logger keeps one copy of a filter)."""
    for name, log_filter in _FILTERS.items():
        logging.getLogger(name).addFilter(log_filter)


def explain(exc: Exception, cfg: ServeConfig) -> str:
    """One line saying why the daemon cannot work with the cluster (for the exit message).

    kafka-python reports every failed bootstrap alike ("Unable to bootstrap"), also a wrong
    SASL password (the broker closes the connection): a plain TCP connection tells them apart.
    """
    if isinstance(exc, OutputError):
        return str(exc)
    if isinstance(exc, kafka_errors.AuthorizationError):
        return f"not authorized: {type(exc).__name__}: {exc}"
    if not (isinstance(exc, kafka_errors.KafkaTimeoutError) and "bootstrap" in str(exc)):
        return f"Kafka error: {type(exc).__name__}: {exc}"
    no_broker = unreachable(cfg)
    if no_broker:
        return no_broker
    address = cfg.bootstrap_servers.split(",")[0].strip()
    protocol = cfg.kafka.get("security_protocol", "PLAINTEXT")
    if protocol.startswith("SASL"):
        return (f"authentication failed at {address}: the broker closed the connection after the "
                f"SASL {cfg.kafka.get('sasl_mechanism', 'PLAIN')} login of user "
                f"{cfg.kafka.get('sasl_plain_username')!r} (wrong user or password?)")
    return (f"{address} accepts connections but does not speak {protocol} Kafka to us: a SASL "
            "or SSL listener? set security_protocol (and sasl_*/ssl_*) in [kafka]")
