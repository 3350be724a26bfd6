"""The Kafka client boundary: what the daemon asks of a consumer, a producer and an admin
client (`protocols`), the errors it tells apart (`errors`), its names for partitions, commit
offsets and rebalances (`partitions`), the kafka-python adapter (`client`, `admin`,
`diagnostics`, `outputs`, `assignor`, `topics`) with its workarounds, and the confluent-kafka
adapter of the data path (`confluent`, `confluent_producer`, `confluent_errors`,
`confluent_settings`). `adapter` is the one place that picks a client; nothing outside this
package imports a client library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["Adapter", "CLIENTS", "CLIENT_DEFAULTS", "adapter"]

CLIENTS = ("kafka-python", "confluent")  # the choices of --kafka-client; the first by default

# Under both clients: retry a lost broker every 2 s at most (kafka-python backs off up to
# 30 s), so a daemon is back within seconds of a broker restart; a cluster that cannot be
# reached at start is reported after 10 s (kafka-python waits 30 s). In kafka-python's names,
# which `[kafka]` takes under both clients; any of them can be overridden there.
CLIENT_DEFAULTS = {"reconnect_backoff_max_ms": 2000, "bootstrap_timeout_ms": 10_000}


@dataclass(frozen=True)
class Adapter:
    """The data path's clients of one library: factories of the main consumer, the offsets
    client (also the state and model topics' readers) and the producer; the poll, the
    transactional calls, the fencing test and the producer's close; the outputs' class."""

    name: str
    make_consumer: Callable
    make_offsets_client: Callable
    make_producer: Callable
    poll: Callable
    transact: Callable
    fenced: Callable
    close_producer: Callable
    outputs: type


def adapter(name: str = CLIENTS[0]) -> Adapter:
    """The adapter of client `name`, one of `CLIENTS` (`ServeConfig.kafka_client`, checked at
    start by `confluent_settings.check_client_choice`); ValueError naming it otherwise.

    >>> adapter().name, adapter().outputs.__name__
    ('kafka-python', 'Outputs')
    """
    if name not in CLIENTS:
        raise ValueError(f"kafka_client must be one of {', '.join(CLIENTS)}, got {name!r:.60}")
    if name == "confluent":
        from river_pa.connectors.kafka import confluent as lib
        outputs = lib.ConfluentOutputs
    else:
        from river_pa.connectors.kafka import client as lib
        from river_pa.connectors.kafka.outputs import Outputs as outputs
    return Adapter(name, lib.make_consumer, lib.make_offsets_client, lib.make_producer, lib.poll,
                   lib.transact, lib.fenced, lib.close_producer, outputs)
