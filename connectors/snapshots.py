"""Snapshots of any size in a compacted Kafka topic (the daemon's state as a Kafka changelog).

A snapshot `name` of version v is written as chunks keyed `name/v/i` (at most `CHUNK_BYTES`
each, so any size fits the broker's `max.message.bytes`, 1 MiB by default), then a manifest
keyed `name` (JSON: version, chunk count, size, SHA-256), then tombstones for the chunks of the
version before. Beside it, a small record keyed `name.progress` (JSON) says how far the
writer has come since (the learner's events learned and the time). Compaction keeps the newest manifest and the chunks it names; a reader reads
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

__all__ = ["CHUNK_BYTES", "Reader", "SnapshotError", "ensure_topic", "publish", "restore",
           "send_progress"]

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


def send_progress(send, topic: str, name: str, progress: dict) -> None:
    """Send `progress` (a JSON object with int ``learned`` and ``time_ms``) keyed
    `<name>.progress`; compaction keeps the newest."""
    send(topic, json.dumps(progress).encode(), key=f"{name}.progress".encode())


def _progress(value: bytes | None) -> dict | None:
    """A progress record's JSON, or None when it is not one (ignored, like a tombstone)."""
    try:
        progress = json.loads(value) if value is not None else None
    except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
        return None
    ok = isinstance(progress, dict) and all(type(progress.get(k)) is int
                                            for k in ("learned", "time_ms"))
    return progress if ok else None


def restore(consumer: KafkaConsumer, topic: str, name: str,
            timeout_s: float = 120) -> tuple[dict, bytes] | None:
    """The newest snapshot `name` in `topic` as (manifest, payload), or None if there is none.

    `consumer` is a group-less consumer (its isolation level decides whether uncommitted
    snapshots count). Raises SnapshotError when the chunks the manifest names are missing or
    do not match its size and digest, or the topic cannot be read to its end in `timeout_s`.
    """
    reader = Reader(consumer, topic, name)
    reader.read_to_end(timeout_s)
    return reader.newest()


def _manifest(value: bytes) -> dict:
    """A manifest record's JSON, or a manifest of no chunks that `newest` refuses (a bad
    record must not stop a reader that restarts at the same record)."""
    try:
        manifest = json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
        manifest = None
    fields = {"version": int, "chunks": int, "bytes": int, "sha256": str}
    if not (isinstance(manifest, dict)
            and all(type(manifest.get(k)) is t for k, t in fields.items())):
        return {"version": 0, "chunks": 0, "bytes": -1, "sha256": "", "invalid": f"{value!r:.80}"}
    return manifest


class Reader:
    """Follows snapshot `name` in `topic` with a group-less `consumer` (assigned here, from
    the beginning): `read_to_end` at start, then `poll` between batches, `newest` to verify."""

    def __init__(self, consumer: KafkaConsumer, topic: str, name: str):
        self.consumer, self.topic, self.name = consumer, topic, name
        self.tp = TopicPartition(topic, 0)
        consumer.assign([self.tp])
        consumer.seek_to_beginning(self.tp)
        self.manifest: dict | None = None
        self.chunks: dict[bytes, bytes] = {}
        self.prefix = f"{name}/".encode()
        self.progress_key = f"{name}.progress".encode()
        self.progress: dict | None = None  # the newest valid progress record

    def read_to_end(self, timeout_s: float) -> None:
        """Read every record now in the topic (SnapshotError after `timeout_s`)."""
        end = self.consumer.end_offsets([self.tp])[self.tp]
        deadline = time.monotonic() + timeout_s
        while self.consumer.position(self.tp) < end:
            if time.monotonic() > deadline:
                raise SnapshotError(f"{self.topic}: could not read to offset {end} in "
                                    f"{timeout_s:.0f} s")
            self.poll(500)

    def poll(self, timeout_ms: int) -> None:
        """Take what one poll returns (manifests, chunks, tombstones)."""
        for record in self.consumer.poll(timeout_ms=timeout_ms).get(self.tp, ()):
            if record.key == self.name.encode():
                self.manifest = _manifest(record.value) if record.value is not None else None
            elif record.key == self.progress_key:
                self.progress = _progress(record.value) or self.progress
            elif record.key is not None and record.key.startswith(self.prefix):
                if record.value is None:
                    self.chunks.pop(record.key, None)
                else:
                    self.chunks[record.key] = record.value

    def newest(self) -> tuple[dict, bytes] | None:
        """The newest manifest and its payload, checked (None before the first manifest)."""
        manifest, name, topic = self.manifest, self.name, self.topic
        if manifest is None:
            return None
        if "invalid" in manifest:
            raise SnapshotError(f"{topic}: the manifest of {name} is not valid: {manifest['invalid']}")
        keys = [f"{name}/{manifest['version']}/{i}".encode() for i in range(manifest["chunks"])]
        missing = [k.decode() for k in keys if k not in self.chunks]
        if missing:
            raise SnapshotError(f"{topic}: snapshot {name} v{manifest['version']} lacks chunks "
                                f"{missing[:3]}")
        payload = b"".join(self.chunks[k] for k in keys)
        if (len(payload) != manifest["bytes"]
                or hashlib.sha256(payload).hexdigest() != manifest["sha256"]):
            raise SnapshotError(f"{topic}: snapshot {name} v{manifest['version']} does not match "
                                "its size and SHA-256")
        return manifest, payload
