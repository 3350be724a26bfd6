"""The one metric lookup (`river_pa.report.make_metrics`): its name lists agree with River's
metric classes, only metrics that fit the model and report a number are taken, and a bad name
is refused without importing river.metrics."""

from __future__ import annotations

import numbers
import subprocess
import sys

import pytest
from river import metrics

from river_pa import PAClassifier, PAMultiClassifier, PARegressor, cli, report
from river_pa.report.metrics import BINARY, MULTICLASS, REFUSED, REGRESSION


def river_metric_names() -> set[str]:
    return {n for n in dir(metrics) if isinstance(c := getattr(metrics, n), type)
            and issubclass(c, metrics.base.Metric) and c is not metrics.base.Metrics}


def test_the_name_lists_cover_rivers_metrics_exactly():
    listed = [*BINARY, *MULTICLASS, *REGRESSION, *REFUSED]
    assert len(listed) == len(set(listed)) and set(listed) == river_metric_names()
    for name in (*BINARY, *MULTICLASS, *REGRESSION):
        assert isinstance(getattr(metrics, name)().get(), numbers.Number), name
    for name in BINARY:
        assert issubclass(getattr(metrics, name), metrics.base.BinaryMetric)
    for name in MULTICLASS:
        assert issubclass(getattr(metrics, name), metrics.base.MultiClassMetric)
    for name in REGRESSION:
        assert issubclass(getattr(metrics, name), metrics.base.RegressionMetric)
    for name in ("ConfusionMatrix", "ClassificationReport"):
        with pytest.raises(NotImplementedError):  # what a report of these would meet
            getattr(metrics, name)().get()


@pytest.mark.parametrize("model, name, kind", [
    (PAClassifier(), "ConfusionMatrix", "reports a table, not a number"),
    (PAClassifier(), "ClassificationReport", "reports a table, not a number"),
    (PAClassifier(), "AdjustedRand", "compares two clusterings, not predictions with labels"),
    (PAClassifier(), "FBeta", "needs a beta (use F1, MacroF1, MicroF1 or WeightedF1)"),
    (PAMultiClassifier(), "F1", "does not work with PAMultiClassifier"),
    (PARegressor(), "Accuracy", "does not work with PARegressor"),
])
def test_metrics_that_do_not_fit_are_refused_naming_those_that_do(model, name, kind):
    with pytest.raises(ValueError) as err:
        report.make_metrics([name], model)
    choices = ", ".join(report.fitting(model))
    assert str(err.value) == f"metric {name} {kind}; choose one of {choices}"


def test_each_kind_of_model_gets_the_metrics_that_fit_it():
    assert report.fitting(PARegressor()) == REGRESSION
    assert report.fitting(PAMultiClassifier()) == MULTICLASS
    assert set(report.fitting(PAClassifier())) == {*BINARY, *MULTICLASS}
    assert [type(m).__name__ for m in report.make_metrics(["MacroF1", "LogLoss"],
                                                           PAClassifier())] == ["MacroF1",
                                                                                "LogLoss"]


def test_a_name_in_another_case_is_suggested(capsys):
    assert cli.main(["evaluate", "--metric", "accuracy", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("river-pa evaluate: unknown metric 'accuracy' (did you mean "
                          "Accuracy?); choose one of Accuracy, BalancedAccuracy,")
    assert err.count("\n") == 1 and "AdjustedRand" not in err and "ConfusionMatrix" not in err


def test_an_unknown_metric_does_not_import_rivers_metrics(tmp_path):
    code = ("import sys; from river_pa import cli; status = cli.main(['evaluate', '--metric', "
            "'Bogus', '--quiet']); print(status, 'river.metrics' in sys.modules, "
            "'scipy.stats' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert run.stdout.split() == ["2", "False", "False"]
    assert run.stderr.startswith("river-pa evaluate: unknown metric 'Bogus'; choose one of")
