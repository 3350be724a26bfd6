"""The records of the model topic a reader parses: manifests and the learner's progress. A bad
one is ignored or refused, never raised out of the reader (which restarts at the same record)."""

from __future__ import annotations

import json

import pytest

from river_pa.connectors.snapshots import _manifest, _progress

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
])
def test_a_bad_manifest_is_refused_with_its_reason(value, reason):
    assert reason in _manifest(value, 3, 9)


def test_a_manifest_is_read_back():
    assert _manifest(json.dumps(MANIFEST).encode(), 3, 9) == MANIFEST
