"""`river-pa evaluate --model A --model B ...`: several models over one pass of the same events,
each with the figures of its own run, one table, one plot; calibrated models leave the
compiled path."""

from __future__ import annotations

import pytest
from river import datasets as river_datasets
from river import evaluate as river_evaluate
from river import linear_model, metrics

import river_pa
from river_pa import cli, report
from river_pa.evaluate import datasets
from river_pa.evaluate.job import evaluate, evaluate_many

NAMES = ["Accuracy", "F1", "LogLoss"]


def river_score(model, delay=None):
    bundle = metrics.base.Metrics([getattr(metrics, n)() for n in NAMES])
    river_evaluate.progressive_val_score(river_datasets.Phishing(), model, bundle, delay=delay)
    return {type(m).__name__: m.get() for m in bundle}


def test_each_model_scores_as_in_its_own_run(tmp_path, capsys):
    path, png = tmp_path / "cmp.jsonl", tmp_path / "cmp.png"
    status = cli.main(["evaluate", "phishing", "--quiet", "--every", "500",
                       "--model", "PAClassifier", "--param", "C=0.1",
                       "--model", "PAClassifier", "--param", "calibration=temperature",
                       "--model", "river.linear_model:LogisticRegression",
                       "--report-path", str(path), "--plot", str(png)])
    assert status == 0
    out = capsys.readouterr().out
    labels = ["PAClassifier(C=0.1)", "PAClassifier(calibration='temperature')",
              "river.linear_model:LogisticRegression"]
    assert "3 models on phishing" in out and all(label[:20] in out for label in labels)
    snapshots = report.load(path)
    by_model = {}
    for s in snapshots:
        by_model.setdefault(s["model"], []).append(s)
    assert list(by_model) == labels
    assert [s["events"] for s in by_model[labels[0]]] == [500, 1000, 1250]
    expected = [river_score(river_pa.PAClassifier(C=0.1)),
                river_score(river_pa.PAClassifier(calibration="temperature")),
                river_score(linear_model.LogisticRegression())]
    for label, figures in zip(labels, expected):
        assert by_model[label][-1]["metrics"] == figures
    assert png.stat().st_size > 0
    # river-pa report renders the same file as one comparison
    assert cli.main(["report", str(path), "--png", str(tmp_path / "again.png")]) == 0
    assert "3 models on phishing" in capsys.readouterr().out


def test_shared_and_own_parameters(tmp_path):
    path = tmp_path / "cmp.jsonl"
    # before any --model: every model's; after one: its own, winning over the shared ones
    assert cli.main(["evaluate", "phishing", "--quiet", "--param", "C=0.01",
                     "--model", "PAClassifier", "--model", "PAClassifier",
                     "--param", "C=1", "--report-path", str(path)]) == 0
    last = {s["model"]: s for s in report.load(path) if "path" in s}
    assert list(last) == ["PAClassifier(C=0.01)", "PAClassifier(C=1)"]
    assert last["PAClassifier(C=1)"]["metrics"] == river_score(river_pa.PAClassifier(C=1.0))


class _Counted:
    """A data source counting the events its blocks give out."""

    def __init__(self, source):
        self.source, self.name, self.given = source, source.name, 0

    def blocks(self):
        for block in self.source.blocks():
            self.given += len(block)
            yield block


def test_one_pass_with_delay():
    source = _Counted(datasets.open_source("phishing"))
    models = {"a": river_pa.PAClassifier(), "b": river_pa.FullScaleInvariantClassifier()}
    results = evaluate_many(source, models, NAMES, delay=10, every=100)
    assert source.given == 1250  # read once for both
    assert results["a"].values == river_score(river_pa.PAClassifier(), delay=10)
    assert results["b"].values == river_score(river_pa.FullScaleInvariantClassifier(), delay=10)


def test_a_run_shorter_than_every_counts_the_time_of_its_last_step(tmp_path):
    data = tmp_path / "five.jsonl"
    data.write_text("".join(f'{{"x": {{"a": {i}.0}}, "y": {str(i % 2 == 0).lower()}}}\n'
                            for i in range(5)))
    models = {"a": river_pa.PAClassifier(), "b": river_pa.FullScaleInvariantClassifier()}
    results = evaluate_many(datasets.open_source(str(data)), models, ["Accuracy"], every=1000)
    for result in results.values():
        assert result.rows[-1].step == 5 and result.seconds > 0
        # the events were read and learned in the step that ended the run: its time was lost,
        # and the table said 5,000,000,000 events/s (5 events over the 1 ns floor)
        assert result.rows[-1].events_per_s < 1e8


def test_a_rejected_event_names_the_model(tmp_path, capsys, monkeypatch):
    """The second model, a pipeline that selects `b`, refuses the line without it."""
    (tmp_path / "sel_pipeline.py").write_text("from river import compose\nfrom river_pa import "
                                       "PAClassifier\nsel = compose.Select('a', 'b') | "
                                       "PAClassifier()\n")
    monkeypatch.chdir(tmp_path)  # where --model sel_pipeline:sel is found
    data = tmp_path / "bad.jsonl"
    data.write_text('{"x": {"a": 1.0, "b": 0.5}, "y": true}\n{"x": {"a": 2.0, "b": 1}, '
                    '"y": false}\n{"x": {"a": 1.5}, "y": true}\n')
    assert cli.main(["evaluate", str(data), "--quiet", "--model", "PAClassifier",
                     "--model", "sel_pipeline:sel"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"river-pa evaluate: {data}:3 (sel_pipeline:sel): KeyError: 'b'"


def test_a_rejected_event_is_named_by_the_model_that_refused_it(tmp_path, capsys):
    # the models take turns of --every events: the error named the events the first model
    # had read (event 1500 here), not the one the second refused
    data = tmp_path / "late.csv"
    rows = [f"{i % 7},{i % 3},{'x' if i == 1201 else ''},{i % 2}" for i in range(1500)]
    data.write_text("a,b,c,y\n" + "\n".join(rows) + "\n")
    assert cli.main(["evaluate", str(data), "--target", "y", "--quiet", "--metric", "Accuracy",
                     "--model", "river.tree:HoeffdingTreeClassifier",  # takes 'x' (nominal)
                     "--model", "PAClassifier"]) == 2
    assert capsys.readouterr().err == (f"river-pa evaluate: {data}:1203 (PAClassifier): "
                                       "feature 'c' has a non-numeric value 'x' of type str\n")


def test_a_calibrated_model_takes_the_river_path():
    result = evaluate(datasets.load("phishing"),
                      river_pa.PAClassifier(calibration="temperature"), NAMES)
    assert result.path.startswith("River iter_progressive_val_score: calibration")
    assert result.values == river_score(river_pa.PAClassifier(calibration="temperature"))
