"""Snapshots of any size in a compacted Kafka topic (the daemon's state as a Kafka changelog).

A snapshot `name` of version v is written as chunks keyed `name/v/i` (at most `CHUNK_BYTES`
each, so any size fits the broker's `max.message.bytes`, 1 MiB by default), then a manifest
keyed `name` (JSON: version, chunk count, size, SHA-256), then tombstones for the chunks of the
version before. Compaction keeps the newest manifest and the chunks it names; a reader reads
the one partition to its end, takes the newest manifest and checks size and digest. Kafka has
no such mechanism and kafka-python none either, hence this module (Kafka Streams and Quix
Streams keep state the same way: a compacted changelog topic read to its end on restore).

"""

from __future__ import annotations

import hashlib
import json
import time

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError
from kafka.structs import TopicPartition

__all__ = ["CHUNK_BYTES", "SnapshotError", "ensure_topic", "publish", "restore"]

CHUNK_BYTES = 512 * 1024


class SnapshotError(RuntimeError):
    """A snapshot in the topic that cannot be restored, with the reason."""


def ensure_topic(admin: KafkaAdminClient, topic: str, replication: int) -> None:
    """Create `topic` (one partition, compacted) unless it exists."""
    try:
        admin.create_topics([NewTopic(topic, 1, replication,
                                      topic_configs={"cleanup.policy": "compact"})])
    except TopicAlreadyExistsError:
        pass


def publish(send, topic: str, name: str, payload: bytes, previous: dict | None) -> dict:
    """Send `payload` as snapshot `name` (the version after `previous`, the manifest this
    returned last time, or 1) with `send(topic, value, key=...)`; return its manifest. The
    caller flushes and checks the sends (or commits the transaction they belong to)."""
    version = previous["version"] + 1 if previous else 1
    chunks = range(0, len(payload), CHUNK_BYTES)
    for i, start in enumerate(chunks):
        send(topic, payload[start:start + CHUNK_BYTES], key=f"{name}/{version}/{i}".encode())
    manifest = {"version": version, "chunks": len(chunks), "bytes": len(payload),
                "sha256": hashlib.sha256(payload).hexdigest()}
    send(topic, json.dumps(manifest).encode(), key=name.encode())
    if previous:
        for i in range(previous["chunks"]):
            send(topic, None, key=f"{name}/{previous['version']}/{i}".encode())
    return manifest


def restore(consumer: KafkaConsumer, topic: str, name: str,
            timeout_s: float = 120) -> tuple[dict, bytes] | None:
    """The newest snapshot `name` in `topic` as (manifest, payload), or None if there is none.

    `consumer` is a group-less consumer (its isolation level decides whether uncommitted
    snapshots count). Raises SnapshotError when the chunks the manifest names are missing or
    do not match its size and digest, or the topic cannot be read to its end in `timeout_s`.
    """
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    manifest, chunks, prefix = None, {}, f"{name}/".encode()
    deadline = time.monotonic() + timeout_s
    while consumer.position(tp) < end:
        if time.monotonic() > deadline:
            raise SnapshotError(f"{topic}: could not read to offset {end} in {timeout_s:.0f} s")
        for record in consumer.poll(timeout_ms=500).get(tp, ()):
            if record.key == name.encode():
                manifest = json.loads(record.value) if record.value is not None else None
            elif record.key is not None and record.key.startswith(prefix):
                if record.value is None:
                    chunks.pop(record.key, None)
                else:
                    chunks[record.key] = record.value
    if manifest is None:
        return None
    keys = [f"{name}/{manifest['version']}/{i}".encode() for i in range(manifest["chunks"])]
    missing = [k.decode() for k in keys if k not in chunks]
    if missing:
        raise SnapshotError(f"{topic}: snapshot {name} v{manifest['version']} lacks chunks {missing[:3]}")
    payload = b"".join(chunks[k] for k in keys)
    if len(payload) != manifest["bytes"] or hashlib.sha256(payload).hexdigest() != manifest["sha256"]:
        raise SnapshotError(f"{topic}: snapshot {name} v{manifest['version']} does not match its "
                            "size and SHA-256")
    return manifest, payload
