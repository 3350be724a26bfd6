"""The records of the model topic a reader parses: manifests and the learner's progress. A bad
one is ignored or refused, never raised out of the reader (which restarts at the same record)."""

from __future__ import annotations

import hashlib
import json

import pytest

from river_pa.connectors.state.snapshots import (
    CHUNK_BYTES, MAX_NUMBER, MAX_SNAPSHOT_BYTES, Publisher, Reader, SnapshotError, _manifest,
    _progress, stamp)

NESTED = b"[" * 100_000  # json.loads raised RecursionError: a predictor crash loop
PROGRESS = {"learned": 550, "events": 600, "time_ms": 1_764_590_000_000, "term": 2, "version": 7}


@pytest.mark.parametrize("value", [b"{not json", b"[1]", b'{"learned": "5", "time_ms": 1}',
                                   b'{"learned": true, "time_ms": 1}', NESTED, None,
                                   json.dumps({**PROGRESS, "learned": -1}).encode(),
                                   json.dumps({**PROGRESS, "learned": 10**15 * 10**15}).encode(),
                                   json.dumps({**PROGRESS, "term": 2.0}).encode()])
def test_a_bad_progress_record_is_ignored(value):
    assert _progress(value) is None


def test_a_progress_record_is_read_back():
    assert _progress(json.dumps(PROGRESS).encode()) == PROGRESS


MANIFEST = {"term": 3, "version": 9, "chunks": 2, "bytes": 600_000, "sha256": "ab"}


@pytest.mark.parametrize("value,reason", [
    (b"{not json", "not a manifest"), (NESTED, "not a manifest"),
    (b'{"version": 1}', "not a manifest"),
    (json.dumps({**MANIFEST, "sha256": 5}).encode(), "not a manifest"),
    (json.dumps({**MANIFEST, "chunks": -1}).encode(), "not a manifest"),
    (json.dumps({**MANIFEST, "version": 8}).encode(), "under the key of 3/9"),
    (json.dumps({**MANIFEST, "chunks": 1}).encode(), "1 chunks cannot hold 600000 bytes"),
    # a new user's crash loop: list(range(2**34)) raised MemoryError in every reader at start
    (json.dumps({**MANIFEST, "chunks": 2**34, "bytes": 2**53}).encode(),
     f"a snapshot of {2**53} bytes (at most {MAX_SNAPSHOT_BYTES})"),
])
def test_a_bad_manifest_is_refused_with_its_reason(value, reason):
    assert reason in _manifest(value, 3, 9)


def test_a_manifest_is_read_back():
    assert _manifest(json.dumps(MANIFEST).encode(), 3, 9) == MANIFEST


class _Unread:
    """The two calls a Reader makes of its consumer when built: records are given to `_take`
    here, as `poll` would."""

    def assign(self, partitions):
        pass

    def seek_to_beginning(self, *partitions):
        pass


def _reader_of(records) -> tuple[Reader, list]:
    invalid = []
    reader = Reader(_Unread(), "events.model", "model", invalid.append)
    for key, value in records:
        reader._take(key, value)
    return reader, invalid


def test_forged_manifests_do_not_push_the_valid_version_out():
    # a new user's try: three forged manifests of newer versions (no chunks, or chunks of
    # junk whose digest matches) hid the valid snapshot from every new learner and predictor
    sent = []
    Publisher("events.model", "model", 2, 12, []).publish(
        lambda topic, value, key: sent.append((key, value)), b"the model" * 1000)
    junk = b"junk"
    forged = [(b"model/99/1000", json.dumps({"term": 99, "version": 1000, "chunks": 1,
                                             "bytes": 4, "sha256": "00"}).encode()),
              (b"model/99/1001/0", junk),
              (b"model/99/1001", json.dumps({"term": 99, "version": 1001, "chunks": 1, "bytes": 4,
                                             "sha256": hashlib.sha256(junk).hexdigest()}).encode()),
              (b"model/99/1002", json.dumps({"term": 99, "version": 1002, "chunks": 1,
                                             "bytes": 4, "sha256": "00"}).encode())]
    chunks, manifest = sent[:-1], sent[-1]
    # the forgeries before, between and after the valid version's chunks and manifest
    for records in (forged + sent, sent + forged, chunks + forged + [manifest]):
        reader, invalid = _reader_of(records)
        tried = []
        for found, payload in reader.candidates():
            tried.append((found["term"], found["version"]))
            if payload != junk:  # the caller's loader refuses the junk (HMAC, unpickling)
                reader.accept(found)
                break
            reader.reject(found, "does not load")
        assert tried[-1] == (2, 13) and reader.held == (2, 13)
        assert len(invalid) == 3  # two lacking chunks or digest, one that does not load


def test_the_writers_snapshot_wins_over_records_of_its_stamp_before_between_or_after_it():
    """Soak seeds 704 and 764: a forged pickle (its chunk and a manifest that matches it) or 64
    bytes of junk as a manifest took the learner's next stamp (2/13), before the learner's own
    chunks or between them and its manifest (an open transaction's records come in offset
    order, with the others' between them); a reader then lost the learner's 2/13, and the
    newest valid model stayed the one before (1,338 of 1,500 labels learned)."""
    sent = []
    Publisher("events.model", "model", 2, 12, []).publish(
        lambda topic, value, key: sent.append((key, value)), b"the model" * 100_000)
    chunks, manifest = sent[:-1], sent[-1]
    assert len(chunks) == 2
    forged = b"forged pickle"
    forgery = [(b"model/2/13/0", forged),
               (b"model/2/13", json.dumps({"term": 2, "version": 13, "chunks": 1, "bytes": 13,
                                           "sha256": hashlib.sha256(forged).hexdigest()}).encode())]
    junk = [(b"model/2/13", b"\x8f" * 64)]
    # a forged chunk between the writer's chunks (its index 1, or 0 again): only each chunk's
    # own digest in the manifest tells the writer's from it
    forged_chunks = [[(b"model/2/13/1", forged)], [(b"model/2/13/0", forged)]]
    orders = [forgery + sent, chunks + forgery + [manifest], chunks + junk + [manifest],
              chunks[:1] + junk + chunks[1:] + [manifest], sent + forgery,
              *(chunks[:1] + f + chunks[1:] + [manifest] for f in forged_chunks),
              chunks[:1] + forgery + chunks[1:] + [manifest]]
    # a manifest of an older writer (no chunk_sha256) is matched with a run of its chunks
    older = json.loads(manifest[1])
    del older["chunk_sha256"]
    orders += [forgery + chunks + [(manifest[0], json.dumps(older).encode())]]
    for records in orders:
        reader, invalid = _reader_of(records)
        tried = []
        for found, payload in reader.candidates():
            tried.append(payload)
            if payload != forged:  # the caller's loader refuses the forgery (HMAC, unpickling)
                reader.accept(found)
                break
            reader.reject(found, "does not load")
        assert tried[-1] == b"the model" * 100_000 and reader.held == (2, 13)
        assert stamp(found) == (2, 13) and found["sha256"] == older["sha256"]


def test_a_manifest_whose_chunk_digests_are_not_one_per_chunk_is_not_valid():
    sent = []
    Publisher("events.model", "model", 1, 0, []).publish(
        lambda topic, value, key: sent.append((key, value)), b"x" * (CHUNK_BYTES + 1))
    manifest = json.loads(sent[-1][1])
    assert manifest["chunk_sha256"] == [hashlib.sha256(b"x" * CHUNK_BYTES).hexdigest(),
                                        hashlib.sha256(b"x").hexdigest()]
    for digests in (manifest["chunk_sha256"][:1], "ab", [1, 2]):
        bad = {**manifest, "chunk_sha256": digests}
        reader, invalid = _reader_of(sent[:-1] + [(sent[-1][0], json.dumps(bad).encode())])
        assert list(reader.candidates()) == []
        assert invalid == [f"events.model: model: chunk_sha256 is not 2 digests: {digests!r}"]


def test_a_forged_chunk_count_without_digests_is_refused_without_allocating_it():
    # the older format (no chunk_sha256) is matched by runs: a count of 2**34 made the
    # reader build a list of that many indexes (MemoryError, a crash loop at every start)
    manifest = json.dumps({"term": 2, "version": 20, "chunks": 2**34, "bytes": 2**34 * CHUNK_BYTES,
                           "sha256": "x"}).encode()
    reader, invalid = _reader_of([(b"model/2/20/0", b"four"), (b"model/2/20", manifest)])
    assert list(reader.candidates()) == [] and "at most" in invalid[0]
    held = reader.versions[(2, 20)]  # a count within the bound, matched by runs: no list
    assert list(held._by_run(MAX_SNAPSHOT_BYTES // CHUNK_BYTES)) == []


def test_a_stamp_beyond_what_a_writer_numbers_does_not_raise_the_next_term():
    # a new user's forged manifest of term 2**53 (no chunks): the learner numbered its term
    # 2**53 + 1, and every snapshot it wrote was not valid to any reader
    forged = json.dumps({"term": 2**53, "version": 2**53, "chunks": 0, "bytes": 0,
                         "sha256": hashlib.sha256(b"").hexdigest()}).encode()
    sent = []
    Publisher("events.model", "model", 3, 4, []).publish(
        lambda topic, value, key: sent.append((key, value)), b"the model")
    reader, invalid = _reader_of([*sent, (b"model/9007199254740992/9007199254740992", forged)])
    assert reader.newest == (3, 5)
    new_term = Publisher("events.model", "model", reader.newest[0] + 1, reader.newest[1], [])
    sent.clear()
    new_term.publish(lambda topic, value, key: sent.append((key, value)), b"the next model")
    again, _ = _reader_of(sent)
    assert [stamp(m) for m, _ in again.candidates()] == [(4, 6)]


def test_a_writer_refuses_to_write_a_snapshot_no_reader_would_take():
    with pytest.raises(SnapshotError, match="would not be a valid snapshot"):
        Publisher("events.model", "model", MAX_NUMBER + 1, 0, []).publish(
            lambda topic, value, key: None, b"m")


def test_a_reader_on_the_fake_client_reads_the_published_snapshots_and_closes(cluster):
    from tests.connectors.fake_kafka import FakeConsumer

    topic = cluster.topic("events.model")
    publisher = Publisher(topic, "model", 1, 0, [])

    def send(topic, value, key=None):
        cluster.append(topic, value, key)

    for payload in (b"first model", b"second model"):
        publisher.publish(send, payload)
    consumer = FakeConsumer(cluster)
    reader = Reader(consumer, topic, "model", pytest.fail)
    reader.read_to_end(5)
    assert reader.newest == (1, 2) and reader.nbytes == len(b"first model" + b"second model")
    assert [(m["version"], p) for m, p in reader.candidates()] == [(2, b"second model"),
                                                                    (1, b"first model")]
    reader.close()
    assert consumer.closed


def test_skipped_records_are_all_counted_and_a_flood_of_them_logs_a_bounded_number_of_lines(
        caplog):
    # a new user's flood of forged chunks: 298,187 warning lines in a minute, 115 MB per start
    from river_pa.connectors.state.recovery import INVALID_EVERY, INVALID_LINES, Recovery

    class Counting(Recovery):
        invalid_snapshots = 0

    daemon = Counting()
    with caplog.at_level("WARNING", logger="river_pa.serve"):
        for i in range(2_500):
            daemon._invalid_snapshot(f"record {i}")
    assert daemon.invalid_snapshots == 2_500
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == INVALID_LINES + 2_500 // INVALID_EVERY == 22
    assert lines[INVALID_LINES - 1].endswith("(20 so far; one line per 1000 from now on)")
    assert lines[-1].startswith("invalid snapshot record skipped: record 1999 (2000 so far")


def test_a_writer_keeps_the_verified_fallback_not_a_refused_newer_version():
    # a new user's try: a forged model 2/1 (refused: its HMAC) counted as a version to keep,
    # and the learner's first publication tombstoned the real 1/1, the valid fallback
    real = {"term": 1, "version": 1, "chunks": 1, "bytes": 9, "sha256": "r"}
    forged = {"term": 2, "version": 1, "chunks": 1, "bytes": 9, "sha256": "f"}
    publisher = Publisher("events.model", "model", 3, 1, [real, forged])
    publisher.verified(real)
    sent = []
    publisher.publish(lambda topic, value, key: sent.append((key, value)), b"model 3/2")
    assert [k for k, v in sent if v is None] == []  # the real 1/1 and the new 3/2 are kept
    sent.clear()
    publisher.publish(lambda topic, value, key: sent.append((key, value)), b"model 3/3")
    assert [k for k, v in sent if v is None] == [b"model/1/1/0", b"model/1/1"]
    publisher = Publisher("events.model", "model", 3, 1, [real, forged])
    publisher.verified(None)  # nothing verified: nothing of the topic is counted
    assert publisher.kept == []


def _manifest_of(term: int, version: int, chunks: int) -> bytes:
    return json.dumps({"term": term, "version": version, "chunks": chunks,
                       "bytes": chunks * CHUNK_BYTES, "sha256": "00"}).encode()


def test_a_reader_of_others_notes_their_manifests_and_forgets_the_tombstoned():
    # the challengers' own snapshots (models/publishing.py): a new learner numbers above them
    # and tombstones their old versions; a flood of names is bounded
    from river_pa.connectors.state import snapshots
    from tests.connectors.fake_kafka import Cluster, FakeConsumer

    cluster = Cluster()
    topic = cluster.topic("events.model")
    publisher = Publisher(topic, "model@c1", 2, 12, [], keep=2)
    for _ in range(3):
        publisher.publish(lambda topic, value, key: cluster.append(topic, value, key),
                          b"c1" * 1000)
    cluster.append(topic, b"{not json", b"model@c1/2/99")
    # helper-35: names of models added and removed long ago filled the cap, so the models of
    # later ones were never noted again (their old versions never tombstoned)
    for i in range(snapshots.MAX_OTHERS + 5):
        publisher = Publisher(topic, f"model@gone{i}", 1, i, [], keep=2)
        publisher.publish(lambda topic, value, key: cluster.append(topic, value, key), b"x")
        publisher.retire(lambda topic, value, key: cluster.append(topic, value, key))
    for i in range(snapshots.MAX_OTHERS + 5):  # forged: 512 chunks claimed, none sent
        cluster.append(topic, _manifest_of(1, 1, 512), f"model@x{i}/1/1".encode())
    cluster.append(topic, _manifest_of(1, 1, 1), b"model@\xff/1/1")  # no name: not UTF-8
    cluster.append(topic, _manifest_of(1, 1, 1), b"model@ours/1/1")
    reader = Reader(FakeConsumer(cluster), topic, "model", pytest.fail, others=True,
                    wanted={"ours"})
    reader.read_to_end(5)
    noted = reader.other_manifests()
    assert [(stamp(m), m["present"]) for m in noted["c1"]] == [((2, 14), [0]), ((2, 15), [0])]
    assert not [n for n in noted if n.startswith("gone")]  # all tombstoned: forgotten
    assert noted["ours"] and len(noted) == snapshots.MAX_OTHERS + 1  # c1, forged x*, ours
    assert {len(m["present"]) for n, ms in noted.items() if n.startswith("x") for m in ms} == {0}
    assert reader.others_newest == (2, 15)
    assert reader.manifests() == []  # not the snapshot it reads


def test_a_writer_tombstones_the_chunks_a_reader_found_of_another_snapshot():
    # helper-36: chunks 0 and 300 of a version claiming 2 chunks: 0 and 1 were tombstoned,
    # 300 stayed
    from tests.connectors.fake_kafka import Cluster, FakeConsumer

    cluster = Cluster()
    topic = cluster.topic("events.model")
    for key in (b"model@c1/1/7/0", b"model@c1/1/7/300"):
        cluster.append(topic, b"chunk", key)
    cluster.append(topic, _manifest_of(1, 7, 2), b"model@c1/1/7")
    reader = Reader(FakeConsumer(cluster), topic, "model", pytest.fail, others=True)
    reader.read_to_end(5)
    sent = []
    Publisher(topic, "model@c1", 2, 7, reader.other_manifests()["c1"]).retire(
        lambda topic, value, key: sent.append((key, value)))
    assert sent == [(b"model@c1/1/7/0", None), (b"model@c1/1/7/300", None),
                    (b"model@c1/1/7", None)]
