"""`river-pa evaluate`: equal to River's progressive validation, the compiled path equal to
the generic one, the libsvm reader equal to scikit-learn's, and clean usage errors."""

from __future__ import annotations

import csv
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import metrics
from river.utils.math import sigmoid

from river_pa import PAClassifier, PARegressor
from river_pa.evaluate import datasets
from river_pa.evaluate.fastmetrics import SUPPORTED, MarginMetrics, RiverMarginMetrics
from river_pa.evaluate.files import CSR
from river_pa.evaluate.libsvm import parse_libsvm, read_libsvm
from river_pa import cli, report
from river_pa.evaluate.job import evaluate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = datasets.shared_folder()
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared data folder {SHARED} is absent (set RIVER_PA_DATA)"
)


def river_score(dataset, model, names, **kwargs):
    """Final metric values of River's own progressive validation."""
    bundle = metrics.base.Metrics([getattr(metrics, n)() for n in names])
    river_evaluate.progressive_val_score(dataset, model, bundle, **kwargs)
    return {type(m).__name__: m.get() for m in bundle}


def main(args):
    return cli.main(["evaluate", *args])


def run_main(tmp_path, *args):
    """The last snapshot of the run's report (the summary), and the report's path."""
    path = tmp_path / "report.jsonl"
    assert main([*args, "--quiet", "--report-path", str(path)]) == 0
    return report.load(path)[-1], path


# -- the main job equals River's progressive validation ---------------------------------------


def test_default_job_equals_river_on_phishing(tmp_path, capsys):
    summary, _ = run_main(tmp_path)
    expected = river_score(river_datasets.Phishing(), PAClassifier(),
                           ["Accuracy", "F1", "LogLoss"])
    assert summary["metrics"] == expected
    assert summary["data"] == "phishing" and summary["events"] == 1250
    assert summary["model"] == "PAClassifier" and summary["params"]["variant"] == "PA-I"
    assert f"{expected['Accuracy']:.6f}" in capsys.readouterr().out


def test_params_reach_the_model(tmp_path):
    summary, _ = run_main(tmp_path, "phishing", "--param", "variant=PA-II", "--param", "C=0.01",
                          "--metric", "Accuracy,LogLoss")
    expected = river_score(river_datasets.Phishing(), PAClassifier(variant="PA-II", C=0.01),
                           ["Accuracy", "LogLoss"])
    assert summary["metrics"] == expected
    summary_json, _ = run_main(tmp_path, "phishing", "--model-params",
                               '{"variant": "PA-II", "C": 0.01}',
                               "--metric", "Accuracy", "--metric", "LogLoss")
    assert summary_json["metrics"] == expected


@pytest.mark.parametrize("delay", [2, 25])
def test_delay_equals_river_iter_progressive_val_score(tmp_path, delay):
    summary, _ = run_main(tmp_path, "trump-approval", "--delay", str(delay))
    model = PARegressor()
    bundle = metrics.base.Metrics([metrics.MAE(), metrics.RMSE(), metrics.R2()])
    for _ in river_evaluate.iter_progressive_val_score(
        river_datasets.TrumpApproval(), model, bundle, delay=delay, step=100
    ):
        pass
    assert summary["metrics"] == {type(m).__name__: m.get() for m in bundle}
    undelayed, _ = run_main(tmp_path, "trump-approval")
    assert summary["metrics"]["MAE"] > undelayed["metrics"]["MAE"]  # late labels cost


def test_delay_one_is_no_delay(tmp_path):
    """River's integer delay N: event i's label is learned just before event i + N is
    predicted, so N = 1 changes nothing; N = 2 leaves one prediction without it."""
    one, _ = run_main(tmp_path, "trump-approval", "--delay", "1")
    none, _ = run_main(tmp_path, "trump-approval")
    assert one["metrics"] == none["metrics"]
    assert one["path"] == none["path"] == "compiled: PARegressor.progressive_csr"
    two, _ = run_main(tmp_path, "trump-approval", "--delay", "2")
    assert two["path"] == "River iter_progressive_val_score: delay 2: labels are learned late"


# -- compiled path == generic River path ------------------------------------------------------


def both_paths(data, make_model, names):
    fast_model, slow_model = make_model(), make_model()
    fast = evaluate(data, fast_model, names, every=4096)
    slow = evaluate(data.without_csr(), slow_model, names, every=4096)
    assert fast.path.startswith("compiled") and slow.path.startswith("River")
    return fast, slow, fast_model, slow_model


@needs_shared
@pytest.mark.parametrize("name, make_model", [
    ("a9a", lambda: PAClassifier()),
    ("phishing-full", lambda: PAClassifier(variant="PA-II", C=0.1)),
    ("mushrooms", lambda: PAClassifier(variant="PA", n_features=2**20)),
    ("abalone", lambda: PARegressor(C=0.1, epsilon=0.5)),
])
def test_compiled_path_equals_river_path(name, make_model):
    data = datasets.load(name)
    names = ["Accuracy", "F1", "LogLoss"] if data.task == "binary" else ["MAE", "RMSE", "R2"]
    fast, slow, fast_model, slow_model = both_paths(data, make_model, names)
    assert fast.values == slow.values
    assert [r.step for r in fast.rows] == [r.step for r in slow.rows]
    assert [r.values for r in fast.rows] == [r.values for r in slow.rows]
    assert fast_model.weights == slow_model.weights and fast_model.weights
    assert fast_model.intercept == slow_model.intercept
    x = data.x[-1]  # the model keeps working per event afterwards, identically
    assert fast_model.predict_one(x) == slow_model.predict_one(x)


@needs_shared
@pytest.mark.parametrize("name, make_model", [
    ("phishing", lambda: PAClassifier()),
    ("abalone", lambda: PARegressor(variant="PA-II", C=0.1, epsilon=0.5)),
])
def test_interpreted_kernels_equal_the_compiled_ones(monkeypatch, name, make_model):
    """A small job runs the array path's kernels in the interpreter: the same rows, weights
    and intercept, bit for bit, as with INTERPRET_VALUES = 0 (Numba)."""
    data = datasets.load(name)
    names = ["Accuracy", "F1", "LogLoss"] if data.task == "binary" else ["MAE", "RMSE", "R2"]
    small, small_model = evaluate(data, model := make_model(), names, every=100), model
    assert small.kernels.startswith("interpreted") and small.compile_seconds == 0.0
    monkeypatch.setattr("river_pa.evaluate.kernels.INTERPRET_VALUES", 0)
    big, big_model = evaluate(data, model := make_model(), names, every=100), model
    assert big.kernels == "Numba" and small.path == big.path
    assert [r.values for r in small.rows] == [r.values for r in big.rows]
    assert small_model.weights == big_model.weights and small_model.weights
    assert small_model.intercept == big_model.intercept


@needs_shared
def test_hash_collisions_fall_back_to_the_river_path():
    """Two columns hashed to one position would need merging inside events: River's path."""
    data = datasets.load("phishing-full").head(3000)
    result = evaluate(data, PAClassifier(n_features=2**4), ["Accuracy", "LogLoss"])
    assert result.path.startswith("River")
    assert result.values == river_score(list(data), PAClassifier(n_features=2**4),
                                        ["Accuracy", "LogLoss"])


def test_a_later_block_with_a_hash_collision_is_learned_event_by_event():
    """Block 1 (events 0-1) uses one column; block 2 two columns hashed to one position."""
    model = PAClassifier(n_features=2)
    keys = ["k0", "k1", "k2"]
    pos = model._index.lookup(tuple(keys)).tolist()
    pair = next([i, j] for i in range(3) for j in range(i) if pos[i] == pos[j])
    indices = [pair[0], pair[0], *pair, pair[1]]
    csr = CSR(np.array([0, 1, 2, 4, 5]), np.array(indices), np.array([1.0, 2.0, 1.0, 3.0, 1.0]),
              np.array([1.0, -1.0, 1.0, 1.0]), keys=keys)
    data = datasets.Data("collide", "binary", [True, False, True, True], csr=csr)

    class TwoBlocks:  # a file read in two chunks: events 0-1, then 2-3
        name, compile_seconds, read_seconds = "collide", 0.0, 0.0

        def blocks(self):
            yield data.head(2)
            rest = CSR(csr.indptr[2:] - csr.indptr[2], csr.indices[2:], csr.data[2:],
                       csr.y[2:], keys=keys)
            yield datasets.Data("collide", "binary", data.y[2:], csr=rest)

    result = evaluate(TwoBlocks(), model, ["Accuracy", "LogLoss"], every=2)
    assert result.path == "compiled: PAClassifier.progressive_csr"
    assert result.values == river_score(list(data), PAClassifier(n_features=2),
                                        ["Accuracy", "LogLoss"])


def test_compiled_path_on_a_libsvm_file_equals_river_on_the_dicts(tmp_path):
    stream = list(itertools.islice(river_datasets.Phishing(), 600))
    keys = list(stream[0][0])
    path = tmp_path / "phishing.svm"
    with open(path, "w") as f:
        for x, y in stream:
            feats = " ".join(f"{keys.index(k) + 1}:{v!r}" for k, v in x.items() if v != 0)
            f.write(f"{'+1' if y else '-1'} {feats}\n")
    summary, _ = run_main(tmp_path, str(path))
    assert summary["path"] == "compiled: PAClassifier.progressive_csr"
    renamed = [({keys.index(k) + 1: v for k, v in x.items() if v != 0}, y) for x, y in stream]
    assert summary["metrics"] == river_score(renamed, PAClassifier(),
                                             ["Accuracy", "F1", "LogLoss"])


def test_only_label_metrics_use_predict_one():
    """With no probability metric River calls predict_one; the compiled path follows."""
    data = datasets.load("phishing")
    csv_like = datasets.Data(data.name, data.task, data.y, data.x, _dense_csr(data))
    fast = evaluate(csv_like, PAClassifier(C=0.1), ["Accuracy", "Recall"])
    assert fast.path.startswith("compiled")
    assert fast.values == river_score(river_datasets.Phishing(), PAClassifier(C=0.1),
                                      ["Accuracy", "Recall"])


def _dense_csr(data):
    from river_pa.evaluate.files import CSR

    keys = list(data.x[0])
    n, d = len(data), len(keys)
    values = np.array([[x[k] for k in keys] for x in data.x], dtype=np.float64)
    y = np.where(np.array(data.y, dtype=bool), 1.0, -1.0)
    return CSR(np.arange(n + 1) * d, np.tile(np.arange(d), n), values.ravel(), y, keys=keys)


def test_compiled_metric_table_matches_river():
    for name, requires_labels in SUPPORTED["binary"].items():
        assert getattr(metrics, name)().requires_labels is requires_labels
    for name in SUPPORTED["regression"]:
        assert isinstance(getattr(metrics, name)(), metrics.base.RegressionMetric)


def test_unsupported_metric_on_the_compiled_path_uses_river_objects():
    data = datasets.load("phishing")
    csv_like = datasets.Data(data.name, data.task, data.y, data.x, _dense_csr(data))
    names = ["BalancedAccuracy", "ROCAUC", "LogLoss"]
    fast = evaluate(csv_like, PAClassifier(), names)
    assert fast.path.startswith("compiled")
    assert fast.values == river_score(river_datasets.Phishing(), PAClassifier(), names)


def test_margin_metrics_equal_river_metric_objects():
    rng = np.random.default_rng(0)
    m = rng.normal(size=3000) * 3
    m[:40], m[40:50], m[50:60], m[60:70] = 0.0, 40.0, -40.0, 1e-17  # ties and clamps
    y = np.where(rng.random(3000) < 0.4, 1.0, -1.0)
    names = ["Accuracy", "Precision", "Recall", "F1", "LogLoss"]
    for use_proba in (True, False):
        fast = MarginMetrics(names, "binary", use_proba)
        slow = RiverMarginMetrics([getattr(metrics, n)() for n in names], "binary", use_proba)
        for lo, hi in [(0, 7), (7, 1000), (1000, 3000)]:
            fast.update(y[lo:hi], m[lo:hi])
            slow.update(y[lo:hi], m[lo:hi])
        assert fast.values() == slow.values()
    # RiverMarginMetrics itself is River's Metrics.update on predict_proba_one's dicts
    bundle = metrics.base.Metrics([getattr(metrics, n)() for n in names])
    for t, margin in zip(y, m):
        p = sigmoid(margin)
        bundle.update(bool(t > 0), {False: 1.0 - p, True: p})
    proba = MarginMetrics(names, "binary", True)
    proba.update(y, m)
    assert proba.values() == {type(b).__name__: b.get() for b in bundle}

    t = rng.normal(size=3000) * 10
    names = ["MAE", "MSE", "RMSE", "R2"]
    fast = MarginMetrics(names, "regression")
    fast.update(t[:5], m[:5])
    fast.update(t[5:], m[5:])
    ref = [getattr(metrics, n)() for n in names]
    for a, b in zip(t.tolist(), m.tolist()):
        for r in ref:
            r.update(a, b)
    assert fast.values() == {n: r.get() for n, r in zip(names, ref)}


# -- files ------------------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("name", ["a9a/a9a.bz2", "usps/usps.t.bz2", "abalone/abalone_scale.bz2"])
def test_libsvm_reader_equals_scikit_learn(name):
    from sklearn.datasets import load_svmlight_file

    csr = read_libsvm(SHARED / name)
    X, y = load_svmlight_file(str(SHARED / name), zero_based=True)
    X.sort_indices()
    np.testing.assert_array_equal(csr.y, y)
    np.testing.assert_array_equal(csr.indptr, X.indptr)
    np.testing.assert_array_equal(csr.indices, X.indices)
    np.testing.assert_array_equal(csr.data, X.data)


def test_libsvm_numbers_round_like_python_float():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.random(3000), rng.normal(size=3000) * 10.0 ** rng.integers(
        -40, 40, 3000)])
    texts = [repr(float(v)) for v in values] + [f"{v:.17g}" for v in values[:2000]] + [
        f"{v:.6e}" for v in values[:2000]] + ["1", "+2.5", "-0", ".5", "5.", "1E3", "007"]
    raw = ("1 " + " ".join(f"{i}:{t}" for i, t in enumerate(texts)) + "\n").encode()
    assert parse_libsvm(raw).data.tolist() == [float(t) for t in texts]


@pytest.mark.parametrize("text, line, message", [
    ("1 1:2\n+1 3:x\n", 2, "expected 'index:value'"),
    ("1 1:2\n\n# comment\n-1 2:1 2:3\n", 4, "feature index repeated"),
    ("1 qid:3 1:2\n", 1, "multi-label and qid lines are not supported"),
    ("1,2 1:2\n", 1, "multi-label"),
    ("1 -3:2\n", 1, "negative feature index"),
    ("1 1:1e999\n", 1, "value is not finite"),
    ("1 1:2\nabc 1:2\n", 2, "expected a number"),
])
def test_bad_libsvm_lines_name_file_and_line(tmp_path, capsys, text, line, message):
    path = tmp_path / "bad.svm"
    path.write_text(text)
    assert main([str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:{line}: {message}" in err and "\n" not in err


def test_csv_and_jsonl_files_equal_river(tmp_path):
    stream = list(itertools.islice(river_datasets.Phishing(), 500))
    keys = list(stream[0][0])
    csv_path, jsonl_path = tmp_path / "phishing.csv", tmp_path / "phishing.jsonl"
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*keys, "label"])
        for x, y in stream:
            writer.writerow([repr(x[k]) for k in keys] + [int(y)])
    with open(jsonl_path, "w") as f:
        for x, y in stream:
            f.write(json.dumps({"x": x, "y": y}) + "\n")
    expected = river_score(stream, PAClassifier(), ["Accuracy", "F1", "LogLoss"])
    from_csv, _ = run_main(tmp_path, str(csv_path), "--target", "label")
    from_jsonl, _ = run_main(tmp_path, str(jsonl_path))
    assert from_csv["path"] == from_jsonl["path"] == "compiled: PAClassifier.progressive_csr"
    assert from_csv["metrics"] == expected == from_jsonl["metrics"]


def test_bad_csv_and_jsonl_lines(tmp_path, capsys):
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("a,b,y\n1,2,0\n3,1\n")
    bad_jsonl = tmp_path / "bad.jsonl"
    bad_jsonl.write_text('{"x": {"a": 1}, "y": true}\n{"x": {"a": 1}}\n')
    assert main([str(bad_csv), "--target", "y", "--quiet"]) == 2
    assert f"{bad_csv}:3: expected 3 fields, found 2" in capsys.readouterr().err
    assert main([str(bad_csv), "--quiet"]) == 2
    assert "needs --target COLUMN" in capsys.readouterr().err
    assert main([str(bad_jsonl), "--quiet"]) == 2
    assert f"{bad_jsonl}:2: expected a JSON object" in capsys.readouterr().err
    flat = tmp_path / "flat.jsonl"  # a target among the features, named as for a CSV file
    flat.write_text('{"a": 1, "y": true}\n')
    assert main([str(flat), "--target", "y", "--quiet"]) == 2
    assert "a JSONL file holds one {\"x\": {...}, \"y\": ...} object a line" in (
        capsys.readouterr().err)
    empty = tmp_path / "empty.svm"
    empty.write_text("# nothing\n")
    assert main([str(empty), "--quiet"]) == 2
    assert f"{empty}: no events" in capsys.readouterr().err
    nan_csv = tmp_path / "nan.csv"
    nan_csv.write_text("a,b,y\n1,2,0\nnan,1,1\n")  # a bad line, as the others
    assert main([str(nan_csv), "--target", "y", "--quiet"]) == 2
    assert f"{nan_csv}:3: feature 'a' has a non-finite value nan" in capsys.readouterr().err
    bad_value = tmp_path / "bad_value.jsonl"
    bad_value.write_text('{"x": {"a": 1}, "y": true}\n{"x": {"a": 2}, "y": false}\n'
                         '{"x": {"a": "s"}, "y": true}\n')
    assert main([str(bad_value), "--quiet", "--delay", "2"]) == 2  # a pipeline may take 's'
    assert (f"{bad_value}:3 (or the one it learned, 2 earlier): "
            "feature 'a' has a non-numeric value 's'" in capsys.readouterr().err)


def test_a_csv_file_with_a_byte_order_mark(tmp_path):
    # Excel's "CSV UTF-8" starts with U+FEFF: --target a said "no target column 'a'; columns:
    # a, label", the mark being invisible
    path = tmp_path / "bom.csv"
    path.write_bytes("a,label\n1,x\n2,y\n3,z\n".encode("utf-8-sig"))
    data = datasets.load(str(path), target="a")
    assert data.x == [{"label": "x"}, {"label": "y"}, {"label": "z"}]
    assert data.y == [1.0, 2.0, 3.0] and data.task == "regression"


def test_a_csv_header_with_a_repeated_name_is_a_usage_error(tmp_path, capsys):
    # was "cannot reshape array of size 2 into shape (4,)"
    path = tmp_path / "dup.csv"
    path.write_text("a,a,label\n1,2,0\n3,4,1\n")
    assert main([str(path), "--target", "label", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"river-pa evaluate: {path}: column 'a' appears more than once in the header")


def test_labels_that_cannot_be_targets_name_the_line(tmp_path, capsys):
    # a list label ended in a traceback (unhashable type: 'list'); an empty CSV target became a
    # class "" of a multiclass task
    listy = tmp_path / "listy.jsonl"
    listy.write_text('{"x": {"a": 1}, "y": 1}\n{"x": {"a": 2}, "y": [0]}\n')
    assert main([str(listy), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"river-pa evaluate: {listy}:2: 'y' must be a number, a string or true/false, "
        "got [0]")
    empty = tmp_path / "empty_target.csv"
    empty.write_text("a,label\n1,1\n2,\n3,0\n")
    assert main([str(empty), "--target", "label", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"river-pa evaluate: {empty}:3: the target 'label' is empty")


def test_unreadable_data_files_are_usage_errors(tmp_path, capsys):
    fake_gz = tmp_path / "fake.svm.gz"
    fake_gz.write_bytes(b"1 1:0.5\n")
    fake_bz2 = tmp_path / "fake.svm.bz2"
    fake_bz2.write_bytes(b"1 1:0.5\n")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    for path, message in [
        (fake_gz, "cannot read the file: Not a gzipped file"),
        (fake_bz2, "cannot read the file: Invalid data stream"),
        (binary, "cannot read the file: 'utf-8' codec can't decode byte 0xff"),
        (tmp_path, "is a directory; give a data set name or a file"),
    ]:
        assert main([str(path), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"river-pa evaluate: {path}{':' if path != tmp_path else ''} {message}" \
            or (message in err and str(path) in err), err
        assert "\n" not in err and "Traceback" not in err


# -- reports, plots, errors, the command --------------------------------------------------------


def test_report_rows_and_plot(tmp_path):
    plot = tmp_path / "curves.png"
    summary, path = run_main(tmp_path, "phishing", "--every", "300", "--limit", "1000",
                             "--plot", str(plot))
    rows = report.load(path)
    assert [r["events"] for r in rows] == [300, 600, 900, 1000]
    expected = river_score(itertools.islice(river_datasets.Phishing(), 1000), PAClassifier(),
                           ["Accuracy", "F1", "LogLoss"])
    assert rows[-1]["metrics"]["Accuracy"] == expected["Accuracy"]
    assert all(r["throughput_eps"] > 0 and r["rss_mib"] > 10 for r in rows)
    assert summary["events"] == 1000 and summary["model"] == "PAClassifier"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["no-such-set"], "unknown data set 'no-such-set'; choose one of phishing, bananas"),
    (["--model", "Nope"], "--model 'Nope': unknown model; choose one of CoordinateScaleInvariantClassifier,"),
    (["--param", "c=1"], "unknown parameter 'c' for PAClassifier; valid parameters: C,"),
    (["--metric", "Nope"], "unknown metric 'Nope'; choose one of Accuracy,"),
    (["--param", "variant=PA-III"], "variant must be one of ['PA', 'PA-I', 'PA-II']"),
    (["--model", "river.nope:Model"], "--model 'river.nope:Model': No module named 'river.nope'"),
    (["--delay", "x"], "argument --delay: invalid int value: 'x'"),
    (["trump-approval", "--model", "PAClassifier"], "metric MAE does not work with PAClassifier; "
     "the default metrics follow the data's task: give --metric names for this model, --task, "
     "or a --model for this task"),
])
def test_usage_errors_are_one_line_with_status_2(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_command_line_subprocess():
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-m", "river_pa", "evaluate", "phishing", "--limit",
                           "400", "--metric", "Accuracy"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = river_score(itertools.islice(river_datasets.Phishing(), 400), PAClassifier(),
                           ["Accuracy"])
    assert f"{expected['Accuracy']:.6f}" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "river_pa", "evaluate", "nope"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
