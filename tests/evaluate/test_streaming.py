"""`river-pa evaluate` reads files in bounded chunks: equal to reading them whole, in every
compression, with bad lines named across chunks, and hostile files refused on one line
(issue 11: huge indices, decompression bombs, null or mixed JSONL labels)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys

import numpy as np
import pytest
import zstandard

from river_pa import PAClassifier, cli
from river_pa.evaluate import datasets, files, libsvm, readers
from river_pa.evaluate.job import evaluate, evaluate_many
from river_pa.evaluate.results import Series


def lines(n: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        cols = np.sort(rng.choice(50, size=rng.integers(1, 8), replace=False))
        feats = " ".join(f"{c}:{rng.normal():.6g}" for c in cols)
        out.append(f"{'+1' if rng.random() < 0.4 else '-1'} {feats}\n")
    return "".join(out).encode()


def run(*args):
    return cli.main(["evaluate", *map(str, args), "--quiet"])


@pytest.mark.parametrize("suffix, compress", [
    ("", lambda b: b), (".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress),
    (".zst", lambda b: zstandard.ZstdCompressor().compress(b)),
])
def test_chunks_equal_the_whole_file_in_every_compression(tmp_path, suffix, compress):
    text = lines(3000)
    path = tmp_path / f"d.svm{suffix}"
    path.write_bytes(compress(text))
    whole = libsvm.parse_libsvm(text)
    chunks = list(libsvm.iter_libsvm(path, chunk_bytes=1000))
    assert len(chunks) > 20 and sum(map(len, chunks)) == 3000
    joined = files.concatenate(chunks)
    for name in ("indptr", "indices", "data", "y"):
        np.testing.assert_array_equal(getattr(joined, name), getattr(whole, name))


def test_a_chunked_run_equals_an_in_memory_run(tmp_path, monkeypatch):
    path = tmp_path / "d.svm"
    path.write_bytes(lines(5000, seed=1))
    whole = evaluate(datasets.load(str(path)), PAClassifier(), ["Accuracy", "LogLoss"],
                     every=700)
    monkeypatch.setattr(libsvm, "CHUNK_BYTES", 997)  # 160 chunks, cut anywhere
    model = PAClassifier()
    stream = datasets.open_source(str(path))
    chunked = evaluate(stream, model, ["Accuracy", "LogLoss"], every=700)
    assert [r.step for r in chunked.rows] == [r.step for r in whole.rows][:-1] + [5000] \
        == list(range(700, 5000, 700)) + [5000]
    assert [r.values for r in chunked.rows] == [r.values for r in whole.rows]
    assert chunked.path == "compiled: PAClassifier.progressive_csr"
    assert stream.position() == path.stat().st_size


def test_a_bad_line_in_a_later_chunk_names_its_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "late.svm"
    path.write_bytes(lines(2000) + b"+1 3:x\n")
    monkeypatch.setattr(libsvm, "CHUNK_BYTES", 4096)
    assert run(path) == 2
    err = capsys.readouterr().err
    assert err == f"river-pa evaluate: {path}:2001: expected 'index:value' (an integer index, " \
                  "a colon and a number)\n"


def test_an_index_beyond_the_range_is_one_line_not_a_memory_blowup(tmp_path, capsys):
    path = tmp_path / "huge.svm"
    path.write_bytes(b"1 1:1\n-1 999999999999999999:1.5 2:1\n")  # was MemoryError, BufferError
    assert run(path) == 2
    assert capsys.readouterr().err == (f"river-pa evaluate: {path}:2: feature index beyond the "
                                       "supported range 0..2147483647\n")


def test_large_indices_within_the_range_work_and_repeats_are_found():
    csr = libsvm.parse_libsvm(b"1 2147483647:1 3:2 2147483000:0.5\n")
    assert csr.indices.tolist() == [2147483647, 3, 2147483000]
    with pytest.raises(files.DataError, match="<bytes>:2: feature index repeated"):
        libsvm.parse_libsvm(b"1 1:1\n1 2147483000:1 5:1 2147483000:2\n")
    model = PAClassifier()
    result = evaluate(datasets.Data("big", "binary", [True, False],
                                    csr=_with_targets(libsvm.parse_libsvm(
                                        b"1 2147483647:1 3:2\n-1 3:1\n"))), model, ["Accuracy"])
    assert result.path.startswith("compiled") and set(model.weights) == {2147483647, 3}


def _with_targets(csr):
    csr.y = np.where(csr.y > 0, 1.0, -1.0)
    return csr


def test_a_line_without_end_is_bounded(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(libsvm, "MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / "zeros.svm.bz2"
    path.write_bytes(bz2.compress(b"0" * (3 << 20)))
    assert run(path) == 2
    assert capsys.readouterr().err == (f"river-pa evaluate: {path}:1: line longer than "
                                       f"{1 << 20} bytes\n")


def test_a_decompression_bomb_is_read_in_bounded_memory(tmp_path):
    """A 0.1 MB bz2 that expands to 144 MiB of events: read through, memory flat (the whole file
    was decompressed and parsed in memory: MemoryError on a 1.5 GB one)."""
    piece = bz2.compress(b"1 1:1\n" * (1 << 20))  # 6 MiB of events, 4.5 KB compressed
    path = tmp_path / "bomb.svm.bz2"
    path.write_bytes(piece * 24)  # concatenated bz2 streams: 144 MiB, 24 Mi events
    code = (
        "import resource, sys; from river_pa.evaluate import libsvm; "
        "list(libsvm.iter_libsvm(sys.argv[1], chunk_bytes=4096)); "  # compile, load the cache
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
        "n = sum(len(c) for c in libsvm.iter_libsvm(sys.argv[1])); "
        "print(n, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=600, check=True)
    events, grown_mib = done.stdout.split()
    assert int(events) == 24 << 20
    assert float(grown_mib) < 64  # 4 MiB chunks: ~30 MiB of arrays, not 144 MiB of text


@pytest.mark.parametrize("text, line, message", [
    ('{"x": {"a": 1}, "y": 1}\n{"x": {"a": 2}, "y": null}\n{"x": {"a": 3}, "y": 1}\n', 2,
     "the label 'y' is missing (None)"),
    ('{"x": {"a": 1}, "y": 1}\n\n{"x": {"a": 2}, "y": "1"}\n', 3,
     "the label '1' is a string, but the one on line 1 is a number: labels of one kind only"),
    ('{"x": {"a": 1}, "y": true}\n{"x": {"a": 2}, "y": 0}\n', 2,
     "the label 0 is a number, but the one on line 1 is true/false: labels of one kind only"),
])
def test_jsonl_null_or_mixed_labels_are_refused_with_file_and_line(tmp_path, capsys, text, line,
                                                                   message):
    path = tmp_path / "labels.jsonl"
    path.write_text(text)  # y: 1, null, 1 was a binary task with 1 -> False
    assert run(path) == 2
    assert capsys.readouterr().err == f"river-pa evaluate: {path}:{line}: {message}\n"


def test_a_third_label_in_a_later_chunk_of_a_binary_task(tmp_path, monkeypatch, capsys):
    path = tmp_path / "three.jsonl"
    events = [{"x": {"a": i}, "y": i % 2} for i in range(30)] + [{"x": {"a": 1}, "y": 2}]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    monkeypatch.setattr(readers, "ROWS", 10)
    assert run(path) == 2
    assert capsys.readouterr().err.startswith(
        f"river-pa evaluate: {path}: event 31: label 2: a binary task takes two labels")


def test_compilation_is_timed_apart_and_skips_scipy_linalg(tmp_path):
    """With an empty Numba cache the run compiles for seconds; the events/s leave that out,
    and no kernel load imports scipy.linalg (0.2-0.5 s, no kernel uses BLAS)."""
    path = tmp_path / "d.svm"
    path.write_bytes(lines(2000))
    code = ("import json, sys; from river_pa import cli, report; "
            "cli.main(['evaluate', sys.argv[1], '--quiet', '--report-path', sys.argv[2]]); "
            "s = report.load(sys.argv[2])[-1]; "
            "print(json.dumps([s['compile_s'], s['seconds'], s['events_per_s'], s['events'], "
            "'scipy.linalg' in sys.modules, 'river.metrics' in sys.modules]))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    done = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, timeout=600, env=env, check=True)
    compile_s, seconds, rate, events, linalg, river_metrics = json.loads(
        done.stdout.strip().splitlines()[-1])
    assert compile_s > 10 * seconds and rate == events / seconds and events == 2000
    assert not linalg and not river_metrics


def test_evaluate_says_which_path_it_took_and_why(tmp_path):
    from river import preprocessing

    path = tmp_path / "d.svm"
    path.write_bytes(lines(300))
    data = datasets.load(str(path))
    runs = {
        "compiled: PAClassifier.progressive_csr": (PAClassifier(), 0),
        "River iter_progressive_val_score: a pipeline has no progressive_csr (the compiled path "
        "exists for PAClassifier and PARegressor only)":
            (preprocessing.StandardScaler() | PAClassifier(), 0),
        "River iter_progressive_val_score: delay 5: labels are learned late": (PAClassifier(), 5),
    }
    for expected, (model, delay) in runs.items():
        assert evaluate(data, model, ["Accuracy"], delay=delay).path == expected


def test_every_does_not_shrink_the_compiled_calls(tmp_path):
    """--every 1 still calls progressive_csr once per chunk of the file, and its rows equal
    those of a run that reports every 500 events at the shared steps."""
    calls = []

    class Counted(PAClassifier):
        def progressive_csr(self, indptr, *args, **kwargs):
            calls.append(len(indptr) - 1)
            return super().progressive_csr(indptr, *args, **kwargs)

    path = tmp_path / "d.svm"
    path.write_bytes(lines(2000))
    rows = []
    every_1 = evaluate(datasets.load(str(path)), Counted(), ["Accuracy"], every=1, on_row=rows.append)
    assert calls == [2000]  # the whole file in one call (interpreted: no warm-up call)
    assert every_1.kernels.startswith("interpreted")
    every_500 = evaluate(datasets.load(str(path)), PAClassifier(), ["Accuracy"], every=500)
    assert len(rows) == 2000
    assert [r.values for r in rows[499::500]] == [r.values for r in every_500.rows]


@pytest.mark.parametrize("delay", [0, 3], ids=["compiled", "river"])
def test_every_1_keeps_a_bounded_series_and_exact_final_figures(tmp_path, delay):
    # Result.rows held one row per event: memory grew with the stream
    path = tmp_path / "d.svm"
    path.write_bytes(lines(30_000, seed=2))
    names = ["Accuracy", "LogLoss"]
    every_1 = evaluate(datasets.open_source(str(path)), PAClassifier(), names, delay, every=1)
    once = evaluate(datasets.open_source(str(path)), PAClassifier(), names, delay, every=10**6)
    kept = [r.step for r in every_1.rows]
    assert len(kept) <= Series().cap < 30_000 // 20
    stride = every_1.rows.stride  # evenly spaced from the first event, and the last one
    assert kept == list(range(1, 30_000, stride)) + [30_000]
    assert stride == 32  # 30,000 / 32 = 938 rows fit in 1,000, / 16 = 1,875 do not
    assert every_1.rows[-1].values == once.rows[-1].values == every_1.values
    assert [r.step for r in once.rows] == [30_000]


def test_several_models_keep_a_bounded_series(tmp_path):
    path = tmp_path / "d.svm"
    path.write_bytes(lines(5_000, seed=3))
    models = {"PA": PAClassifier(variant="PA"), "PA-I": PAClassifier()}
    every_1 = evaluate_many(datasets.open_source(str(path)), models, ["Accuracy"], every=1)
    alone = evaluate(datasets.open_source(str(path)), PAClassifier(), ["Accuracy"], every=5000)
    for result in every_1.values():  # 5,000 / 8 = 625 rows fit in 1,000, / 4 = 1,250 do not
        assert [r.step for r in result.rows] == list(range(1, 5_000, 8)) + [5_000]
    assert every_1["PA-I"].rows[-1].values == alone.values
