"""Snapshots of any size in a compacted Kafka topic (the daemon's state as a Kafka changelog).

A snapshot `name` is written by one writer at a time, in terms: a writer starts a term numbered
above every term it finds in the topic (the active learner at each takeover of the lease), and
numbers its versions above every version it finds. Version v of term t is written as chunks
keyed `name/t/v/i` (at most `CHUNK_BYTES` each, so any size fits the broker's
`max.message.bytes`, 1 MiB by default), then its manifest keyed `name/t/v` (JSON: term,
version, chunk count, size, SHA-256, and each chunk's SHA-256: chunk i is the newest chunk i
of its version with that digest, so records of the same stamp from anyone else, before,
between or after the writer's, change nothing), then tombstones for
the manifests and chunks of all but the newest `KEEP_VERSIONS` versions (a writer's `keep`:
the model topic's, `--keep-versions`, are versions a pin can serve again): compaction keeps
those, so when the newest does not load (a bad record, a half-written version of a writer that
died) an older one still can. The
payload (a checkpoint, connectors/state/checkpoint.py) repeats term and version in its signed header,
so a replayed or relabelled manifest does not verify. Beside it, a small record keyed
`name.progress` (JSON) says how far the writer has come since (the learner's events learned,
the time, and the term and version of its newest model). A reader made with `others=True`
also notes the manifests of the snapshots named `name@OTHER` (the challengers' own in the
model topic, connectors/models/publishing.py), so a writer of them numbers its versions above
theirs and tombstones their old ones.

A reader reads the one partition to its end and offers the versions newer than the one it
holds (`candidates`, newest first), each checked for size and digest; the caller verifies the
payload and calls `accept` or `reject`. Anything not valid (a key or manifest that does not
parse, no chunks that match a manifest, chunks too large, a version not newer than the one
held)
is reported once to `on_invalid` with the reason and dropped. The reader keeps the chunks of
the `KEEP_VERSIONS + 1` newest manifests above the one held (older ones too while they all
hold at most `max_pending_bytes`: a manifest is not verified until its version is loaded, and
forged ones must not push the valid versions out), and of versions whose manifest has not
come yet up to `max_pending_bytes` and `MAX_PENDING_VERSIONS` (the oldest dropped first;
a newer manifest does not drop them either, for the same reason). Kafka has no such
mechanism and kafka-python none either, hence this module (Kafka Streams and Quix Streams keep
state the same way: a compacted changelog topic read to its end on restore).

"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Collection
from dataclasses import dataclass, field


from river_pa.connectors.errors import SnapshotError
from river_pa.connectors.kafka.partitions import TopicPartition
from river_pa.connectors.kafka.protocols import Consumer

__all__ = ["CHUNK_BYTES", "KEEP_VERSIONS", "MAX_SNAPSHOT_BYTES", "Publisher", "Reader",
           "SnapshotError", "read_to_end", "restore", "send_progress", "stamp"]

CHUNK_BYTES = 512 * 1024
KEEP_VERSIONS = 2  # versions whose chunks a writer leaves in the topic
MAX_NUMBER = 2**53  # terms, versions, counts: beyond this a record is not valid
MAX_PENDING_BYTES = 256 * 2**20  # chunks of versions whose manifest has not come, per reader
MAX_SNAPSHOT_BYTES = MAX_PENDING_BYTES  # a larger one could not be read: refused as a manifest
# the newest stamp a writer numbers its own above: a stamp beyond it cannot be a writer's (2**52
# terms or versions) and numbering above it would leave MAX_NUMBER, every later snapshot not
# valid (a new user's forged manifest of term 2**53: the learner wrote only unreadable ones)
MAX_NUMBERED = 2**52
MAX_PENDING_VERSIONS = 4  # versions whose manifest has not come, per reader
MAX_RUNS = 2  # runs of chunks of one version not matched by a manifest yet (see _Version)
_KEY = re.compile(rb"/(\d{1,16})/(\d{1,16})(?:/(\d{1,16}))?")  # bytes: ASCII digits only
_OTHER_KEY = re.compile(rb"([^/]{1,200})/(\d{1,16})/(\d{1,16})(?:/(\d{1,3}))?")  # OTHER/t/v[/i]
MAX_OTHERS = 256  # names `name@OTHER` a reader notes (beside its `wanted`: a flood of forged ones)
MAX_OTHER_VERSIONS = 1001  # versions noted per such name (the newest; --keep-versions <= 1000)
MAX_OTHER_CHUNKS = 100_000  # chunks noted over all of them
MAX_CHUNKS = MAX_SNAPSHOT_BYTES // CHUNK_BYTES  # of one snapshot


def stamp(manifest: dict) -> tuple[int, int]:
    """(term, version): the order of snapshots (newer is greater)."""
    return manifest["term"], manifest["version"]


class Publisher:
    """The writer of snapshot `name` in `topic` for term `term`; `kept` are the manifests
    already in the topic (oldest first), `version` the newest version seen there."""

    def __init__(self, topic: str, name: str, term: int, version: int, kept: list[dict],
                 keep: int = KEEP_VERSIONS):
        self.topic, self.name, self.term, self.version = topic, name, term, version
        self.kept, self.keep = sorted(kept, key=stamp), keep

    def verified(self, accepted: dict | None) -> None:
        """Keep (and so tombstone in turn) only the versions up to `accepted`, the newest
        version whose payload verified (None: none did): the newer ones were refused, and
        counting them pushed the valid fallback out (a new user's forged model 2/1 was kept,
        the real 1/1 tombstoned). Refused records are left to the topic, not deleted: one
        signed with a key rotated since must survive a key rolled back."""
        self.kept = [] if accepted is None else [m for m in self.kept
                                                 if stamp(m) <= stamp(accepted)]

    def next_stamp(self) -> dict:
        """The term and version the next `publish` writes (for the payload's signed header)."""
        return {"term": self.term, "version": self.version + 1}

    def publish(self, send, payload: bytes) -> dict:
        """Send `payload` as version `next_stamp()` with `send(topic, value, key=...)`, then
        tombstone all but the newest `keep`; return its manifest. The caller flushes
        and checks the sends (or commits the transaction they belong to)."""
        if max(self.term, self.version + 1) > MAX_NUMBER:  # (see MAX_NUMBERED: not reached)
            raise SnapshotError(f"{self.topic}: {self.name} {self.term}/{self.version + 1} "
                                "would not be a valid snapshot")
        chunks = [payload[i:i + CHUNK_BYTES] for i in range(0, len(payload), CHUNK_BYTES)]
        manifest = {**self.next_stamp(), "chunks": len(chunks), "bytes": len(payload),
                    "sha256": hashlib.sha256(payload).hexdigest(),
                    "chunk_sha256": [hashlib.sha256(c).hexdigest() for c in chunks]}
        prefix = f"{self.name}/{self.term}/{manifest['version']}"
        for i, chunk in enumerate(chunks):
            send(self.topic, chunk, key=f"{prefix}/{i}".encode())
        send(self.topic, json.dumps(manifest).encode(), key=prefix.encode())
        self.kept.append(manifest)
        self._tombstone(send, self.kept[:-self.keep])
        self.kept = self.kept[-self.keep:]
        self.version = manifest["version"]
        return manifest

    def retire(self, send) -> None:
        """Tombstone every version kept: the snapshot is gone once compacted."""
        self._tombstone(send, self.kept)
        self.kept = []

    def _tombstone(self, send, manifests: list[dict]) -> None:
        """Tombstone each of `manifests` and its chunks (those ``present``, when a reader
        noted which: `Reader.other_manifests`)."""
        for old in manifests:
            old_prefix = f"{self.name}/{old['term']}/{old['version']}"
            for i in old.get("present", range(old["chunks"])):
                send(self.topic, None, key=f"{old_prefix}/{i}".encode())
            send(self.topic, None, key=old_prefix.encode())


def restore(consumer: Consumer, topic: str, name: str,
            timeout_s: float = 120) -> tuple[dict, bytes] | None:
    """The newest snapshot `name` in `topic` whose chunks match its manifest, as (manifest,
    payload), or None (the payload is not verified further: see `Reader`). `consumer` is a
    group-less consumer (its isolation level decides whether uncommitted snapshots count)."""
    reader = Reader(consumer, topic, name, on_invalid=lambda reason: None)
    reader.read_to_end(timeout_s)
    return next(reader.candidates(), None)


def read_to_end(consumer: Consumer, tp: TopicPartition, poll, timeout_s: float) -> None:
    """Call `poll(500)` until `consumer` has read `tp` to the end offset it has now
    (SnapshotError after `timeout_s`)."""
    end = consumer.end_offsets([tp])[tp]
    deadline = time.monotonic() + timeout_s
    while consumer.position(tp) < end:
        if time.monotonic() > deadline:
            raise SnapshotError(f"{tp.topic}: could not read to offset {end} in "
                                f"{timeout_s:.0f} s")
        poll(500)


def send_progress(send, topic: str, name: str, progress: dict) -> None:
    """Send `progress` (a JSON object of ints: ``learned``, ``events``, ``time_ms``, and the
    ``term`` and ``version`` of the newest model) keyed `<name>.progress`; compaction keeps
    the newest."""
    send(topic, json.dumps(progress).encode(), key=f"{name}.progress".encode())


def _json(value: bytes, fields: tuple[str, ...]) -> dict | None:
    """The JSON object in `value` if it has every field in `fields` as an int in
    [0, MAX_NUMBER] (a bool is not one), else None."""
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
        return None
    ok = isinstance(obj, dict) and all(type(obj.get(k)) is int and 0 <= obj[k] <= MAX_NUMBER
                                       for k in fields)
    return obj if ok else None


def _progress(value: bytes | None) -> dict | None:
    """A progress record's JSON, or None when it is not one (ignored, like a tombstone)."""
    if value is None:
        return None
    return _json(value, ("learned", "events", "time_ms", "term", "version"))


def _manifest(value: bytes, term: int, version: int) -> dict | str:
    """A manifest record's JSON, or why it is not a valid one of version `version` of `term`
    (its key's)."""
    manifest = _json(value, ("term", "version", "chunks", "bytes"))
    if manifest is None or not isinstance(manifest.get("sha256"), str):
        return f"not a manifest: {value!r:.80}"
    if stamp(manifest) != (term, version):
        return (f"manifest of term {manifest['term']} version {manifest['version']} under the "
                f"key of {term}/{version}")
    if manifest["bytes"] > MAX_SNAPSHOT_BYTES:  # its chunks could never all be held
        return f"a snapshot of {manifest['bytes']} bytes (at most {MAX_SNAPSHOT_BYTES})"
    if manifest["chunks"] != -(-manifest["bytes"] // CHUNK_BYTES):
        return f"{manifest['chunks']} chunks cannot hold {manifest['bytes']} bytes"
    digests = manifest.get("chunk_sha256")  # absent from manifests before it (run matching)
    if digests is not None and not (isinstance(digests, list) and len(digests) ==
                                    manifest["chunks"] and all(isinstance(d, str) for d in digests)):
        return f"chunk_sha256 is not {manifest['chunks']} digests: {digests!r:.80}"
    return manifest


@dataclass
class _Version:
    """What a reader holds of one version: runs of chunks not matched by a manifest yet
    (`runs`, oldest first) and the manifests that matched some (`found`: (manifest, payload),
    in arrival order). A writer sends chunks 0, 1, ... then the manifest: a chunk whose index
    is already in the newest run begins another, so at most `MAX_RUNS` copies of an index are
    held. A manifest takes, for each index, the newest chunk with its digest; one without
    per-chunk digests (an older writer's) takes the newest run of exactly its chunks. So the
    writer's snapshot is read whatever records of its stamp others send before, between or
    after its own (a forged or junk manifest, a forged chunk: soak seeds 704 and 764, where
    the learner's own snapshot of a stamp was lost and the newest valid model stayed 162
    labels behind)."""

    arrival: int
    runs: list[dict[int, bytes]] = field(default_factory=list)
    found: list[tuple[dict, bytes]] = field(default_factory=list)
    nbytes: int = 0

    def add_chunk(self, index: int, value: bytes) -> None:
        if not self.runs or index in self.runs[-1]:
            self.runs.append({})
            if len(self.runs) > MAX_RUNS:  # a flood of chunks under one stamp
                self.nbytes -= sum(map(len, self.runs.pop(0).values()))
        self.runs[-1][index] = value
        self.nbytes += len(value)

    def drop_chunk(self, index: int) -> None:
        for run in self.runs:
            self.nbytes -= len(run.pop(index, b""))

    def match(self, manifest: dict) -> bool:
        """Pair `manifest` with chunks of its count, size and digests (see the class); the
        chunks it takes are no longer held as unmatched."""
        digests = manifest.get("chunk_sha256")
        for picked in (self._by_digest(digests) if digests else self._by_run(manifest["chunks"])):
            payload = b"".join(run[i] for i, run in enumerate(picked))
            if len(payload) == manifest["bytes"] and \
                    hashlib.sha256(payload).hexdigest() == manifest["sha256"]:
                for i, run in enumerate(picked):
                    del run[i]
                self.runs = [run for run in self.runs if run]
                self.found.append((manifest, payload))
                return True
        return False

    def _by_run(self, count: int):
        """For each run of exactly the indexes 0 .. count - 1, newest first: that run, once per
        index."""
        for run in reversed(self.runs):  # (no list of `count` items: a forged count)
            if len(run) == count and all(i in run for i in range(count)):
                yield [run] * count

    def _by_digest(self, digests: list[str]):
        """The run of each index's newest chunk with its digest, if every index has one."""
        picked = []
        for i, digest in enumerate(digests):
            run = next((r for r in reversed(self.runs) if i in r and
                        hashlib.sha256(r[i]).hexdigest() == digest), None)
            if run is None:
                return
            picked.append(run)
        yield picked


class Reader:
    """Follows snapshot `name` in `topic` with a group-less `consumer` (assigned here, from
    the beginning): `read_to_end` at start, then `poll` between batches; `candidates` to try,
    `accept` or `reject` each. `on_invalid(reason)` is called once per record or version
    that is not valid."""

    def __init__(self, consumer: Consumer, topic: str, name: str, on_invalid,
                 max_pending_bytes: int = MAX_PENDING_BYTES, others: bool = False,
                 wanted: Collection[str] = ()):
        self.consumer, self.topic, self.name = consumer, topic, name
        self.on_invalid, self.max_pending_bytes = on_invalid, max_pending_bytes
        self.tp = TopicPartition(topic, 0)
        consumer.assign([self.tp])
        consumer.seek_to_beginning(self.tp)
        self.versions: dict[tuple[int, int], _Version] = {}
        self.held: tuple[int, int] = (0, 0)  # the version accepted (none: (0, 0))
        # the newest term and version of a manifest seen, up to MAX_NUMBERED each
        self.newest: tuple[int, int] = (0, 0)
        self.arrivals = 0
        self.prefix = f"{name}/".encode()
        self.progress_key = f"{name}.progress".encode()
        self.progress: dict | None = None  # the newest valid progress record
        # with `others`: {OTHER: {(term, version): {"manifest": manifest or None, "chunks":
        # {index, ...}}}} of the snapshots `name@OTHER` in the topic (not verified: what a
        # writer of them numbers above and tombstones; `wanted` names always noted), and the
        # newest stamp of their manifests
        self.others_prefix = f"{name}@".encode() if others else None
        self.others: dict[str, dict[tuple[int, int], dict]] = {}
        self.others_newest: tuple[int, int] = (0, 0)
        self.wanted, self.other_chunks = set(wanted), 0

    def close(self) -> None:
        """Close the reader's consumer."""
        self.consumer.close()

    @property
    def nbytes(self) -> int:
        """Bytes of chunks held."""
        return sum(v.nbytes for v in self.versions.values())

    def read_to_end(self, timeout_s: float) -> None:
        """Read every record now in the topic (SnapshotError after `timeout_s`)."""
        read_to_end(self.consumer, self.tp, self.poll, timeout_s)

    def poll(self, timeout_ms: int) -> None:
        """Take what one poll returns (manifests, chunks, tombstones, progress)."""
        for record in self.consumer.poll(timeout_ms=timeout_ms).get(self.tp, ()):
            self.take(record)

    def take(self, record) -> None:
        """Take one record of the topic (those of other snapshots are ignored)."""
        if record.key == self.progress_key:
            self.progress = _progress(record.value) or self.progress
        elif record.key is not None and record.key.startswith(self.prefix):
            self._take(record.key, record.value)
        elif self.others_prefix and record.key and record.key.startswith(self.others_prefix):
            self._take_other(record.key, record.value)

    def _take_other(self, key: bytes, value: bytes | None) -> None:
        """Note (or forget, at its tombstone) a manifest of a snapshot `name@OTHER`, or which
        of its chunks are in the topic; anything else is ignored."""
        match = _OTHER_KEY.fullmatch(key, len(self.others_prefix))
        try:
            other = match and match[1].decode()
        except UnicodeDecodeError:  # no model's name: its tombstones would miss the key
            return
        if not other:
            return
        at, index = (int(match[2]), int(match[3])), match[4] and int(match[4])
        versions = self.others.get(other)
        if versions is None:
            if value is None or (len(self.others) >= MAX_OTHERS and other not in self.wanted):
                return
            versions = self.others[other] = {}
        noted = versions.setdefault(at, {"manifest": None, "chunks": set()})
        if index is not None:
            self._note_chunk(noted["chunks"], index, value is not None, other in self.wanted)
        elif value is None:
            noted["manifest"] = None
        elif isinstance(manifest := _manifest(value, *at), dict):
            noted["manifest"] = manifest
            if max(at) <= MAX_NUMBERED:
                self.others_newest = max(self.others_newest, at)
        if noted["manifest"] is None and not noted["chunks"]:
            del versions[at]
        elif len(versions) > MAX_OTHER_VERSIONS:
            self.other_chunks -= len(versions.pop(min(versions))["chunks"])
        if not versions:
            del self.others[other]

    def _note_chunk(self, chunks: set, index: int, present: bool, wanted: bool) -> None:
        if not present:
            self.other_chunks -= index in chunks
            chunks.discard(index)
        elif index not in chunks and index < MAX_CHUNKS and (
                wanted or self.other_chunks < MAX_OTHER_CHUNKS):
            chunks.add(index)
            self.other_chunks += 1

    def _invalid(self, reason: str) -> None:
        self.on_invalid(f"{self.topic}: {self.name}: {reason}")

    def _take(self, key: bytes, value: bytes | None) -> None:
        match = _KEY.fullmatch(key, len(self.prefix) - 1)
        if match is None:
            if value is not None:
                self._invalid(f"a record with the key {key!r:.80} (not name/term/version[/i])")
            return
        term, version, index = (int(g) if g is not None else None for g in match.groups())
        at = (term, version)
        if value is None:  # a tombstone: the version (or one chunk of it) is gone
            if index is None:
                self.versions.pop(at, None)
            elif at in self.versions:
                self.versions[at].drop_chunk(index)
            return
        if at <= self.held:
            if index is None:  # a replay, or a late write of an older term: never loaded
                self._invalid(f"version {term}/{version} is not newer than {self._held_text()}")
            return
        if index is not None and len(value) > CHUNK_BYTES:
            return self._invalid(f"chunk {term}/{version}/{index} of {len(value)} bytes (at "
                                 f"most {CHUNK_BYTES})")
        held = self.versions.get(at)
        if held is None:
            self.arrivals += 1
            held = self.versions[at] = _Version(self.arrivals)
        if index is None:
            self._take_manifest(at, held, value)
        else:
            held.add_chunk(index, value)
            self._bound()

    def _take_manifest(self, at: tuple[int, int], held: _Version, value: bytes) -> None:
        manifest = _manifest(value, *at)
        if isinstance(manifest, str):
            return self._invalid(manifest)
        if max(at) <= MAX_NUMBERED:
            self.newest = max(self.newest, at)
        if not held.match(manifest):
            return self._invalid(f"version {at[0]}/{at[1]}: no chunks read match its manifest "
                                 "(count, size and SHA-256); skipped")
        # the oldest announced versions go beyond KEEP_VERSIONS + 1 only while they hold more
        # than max_pending_bytes of chunks: manifests are unverified until loaded, and three
        # forged ones (no chunks, or chunks of junk) cut by count pushed the valid versions
        # out, so no new learner or predictor could start (found by a new user's try)
        announced = sorted(k for k, v in self.versions.items() if v.found)
        total = sum(self.versions[k].nbytes for k in announced)
        for old in announced[:-(KEEP_VERSIONS + 1)]:
            if total <= self.max_pending_bytes:
                break
            total -= self.versions.pop(old).nbytes

    def _bound(self) -> None:
        """Drop versions without a manifest, the oldest first, beyond `max_pending_bytes` or
        `MAX_PENDING_VERSIONS` (a writer has one such version at a time)."""
        pending = sorted((v.arrival, k) for k, v in self.versions.items() if not v.found)
        total = sum(self.versions[k].nbytes for _, k in pending)
        for n, (_, at) in enumerate(pending):
            if total <= self.max_pending_bytes and len(pending) - n <= MAX_PENDING_VERSIONS:
                break
            total -= self.versions.pop(at).nbytes
            self._invalid(f"chunks of version {at[0]}/{at[1]} with no manifest, beyond "
                          f"{self.max_pending_bytes} bytes or {MAX_PENDING_VERSIONS} versions: "
                          "dropped")

    def _held_text(self) -> str:
        return f"the one held ({self.held[0]}/{self.held[1]})" if self.held != (0, 0) else "none"

    def manifests(self) -> list[dict]:
        """The newest manifest of each version held, oldest first (a writer's `kept`)."""
        return [v.found[-1][0] for _, v in sorted(self.versions.items()) if v.found]

    def other_manifests(self) -> dict[str, list[dict]]:
        """{OTHER: the manifests noted of snapshot `name@OTHER`, oldest first} (`others`), each
        with ``present``, the indexes of its chunks in the topic: a writer tombstones those,
        not the count a manifest gives (one forged manifest of 512 chunks, and none, made the
        learner send 513 tombstones)."""
        return {other: [{**noted["manifest"], "present": sorted(noted["chunks"])}
                        for _, noted in sorted(versions.items()) if noted["manifest"]]
                for other, versions in self.others.items()}

    def candidates(self):
        """Yield (manifest, payload) of the versions newer than the one held, newest first
        (within a version, the manifest read last first), each matched with its chunks by
        count, size and digest. The caller `accept`s or `reject`s each one it tries."""
        for at in sorted(self.versions, reverse=True):
            held = self.versions.get(at)
            for found in reversed(held.found if held else []):
                if found in held.found:  # not rejected meanwhile
                    yield found

    def reject(self, manifest: dict, reason: str) -> None:
        """Report `manifest` (its version, as that manifest says it) as not valid and drop it."""
        at = stamp(manifest)
        held = self.versions.get(at)
        if held is not None:
            held.found = [f for f in held.found if f[0] is not manifest]
            if not held.found and not held.runs:
                del self.versions[at]
        self._invalid(f"version {manifest['term']}/{manifest['version']} {reason}; skipped")

    def accept(self, manifest: dict) -> None:
        """Hold `manifest`'s version: it and every older one are dropped (never loaded)."""
        self.held = stamp(manifest)
        for at in [k for k in self.versions if k <= self.held]:
            del self.versions[at]
