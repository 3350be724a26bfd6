"""The Kafka client boundary: what the daemon asks of a consumer, a producer and an admin
client (`protocols`), the errors it tells apart (`errors`), the kafka-python adapter
(`client`, `admin`, `diagnostics`, `outputs`, `assignor`, `topics`) with its workarounds, and
the confluent-kafka adapter of the data path (`confluent`, `confluent_errors`,
`confluent_settings`). `adapter` is the one place that picks a client; nothing outside this
package imports a client library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["Adapter", "adapter"]


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


def adapter(name: str = "kafka-python") -> Adapter:
    """The adapter of client `name` ("kafka-python" or "confluent": `ServeConfig.kafka_client`,
    checked at start by `confluent_settings.check_client_choice`).

    >>> adapter().name, adapter().outputs.__name__
    ('kafka-python', 'Outputs')
    """
    if name == "confluent":
        from river_pa.connectors.kafka import confluent as lib
        outputs = lib.ConfluentOutputs
    else:
        from river_pa.connectors.kafka import client as lib
        from river_pa.connectors.kafka.outputs import Outputs as outputs
    return Adapter(name, lib.make_consumer, lib.make_offsets_client, lib.make_producer, lib.poll,
                   lib.transact, lib.fenced, lib.close_producer, outputs)
