"""The records of the model topic a reader parses: manifests and the learner's progress. A bad
one is ignored or refused, never raised out of the reader (which restarts at the same record)."""

from __future__ import annotations

import json

import pytest

from river_pa.connectors.snapshots import _manifest, _progress

NESTED = b"[" * 100_000  # json.loads raised RecursionError: a predictor crash loop


@pytest.mark.parametrize("value", [b"{not json", b"[1]", b'{"learned": "5", "time_ms": 1}',
                                   b'{"learned": true, "time_ms": 1}', NESTED, None])
def test_a_bad_progress_record_is_ignored(value):
    assert _progress(value) is None


def test_a_progress_record_is_read_back():
    record = {"learned": 550, "events": 600, "time_ms": 1_764_590_000_000}
    assert _progress(json.dumps(record).encode()) == record


@pytest.mark.parametrize("value", [b"{not json", NESTED, b'{"version": 1}'])
def test_a_bad_manifest_is_one_of_no_chunks_marked_invalid(value):
    manifest = _manifest(value)
    assert manifest["chunks"] == 0 and manifest["invalid"] == f"{value!r:.80}"
