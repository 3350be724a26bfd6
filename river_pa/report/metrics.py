"""River metrics by class name: the one lookup of `evaluate` and `serve`."""

from __future__ import annotations

__all__ = ["BINARY", "MULTICLASS", "REFUSED", "REGRESSION", "fitting", "make_metrics",
           "metric_names"]


def metric_names(values: list[str] | str | None) -> list[str]:
    """Names from repeated and comma-separated ``--metric`` values, in order.

    >>> metric_names(["Accuracy,F1", " LogLoss "])
    ['Accuracy', 'F1', 'LogLoss']
    >>> metric_names(None)
    []

    """
    if isinstance(values, str):
        values = [values]
    return [n.strip() for v in values or [] for n in v.split(",") if n.strip()]


# River 0.26.1's metrics that report one number, by the predictions they score. A name list, so
# that a bad name is refused without importing river.metrics (which imports scipy.stats, 1-5 s
# on a busy machine); tests/report/test_metrics.py checks it against River's classes.
BINARY = ("F1", "Jaccard", "LogLoss", "MCC", "Precision", "ROCAUC", "Recall", "RollingPRAUC",
          "RollingROCAUC")
MULTICLASS = ("Accuracy", "BalancedAccuracy", "CohenKappa", "CrossEntropy", "GeometricMean",
              "MacroF1", "MacroJaccard", "MacroPrecision", "MacroRecall", "MicroF1",
              "MicroJaccard", "MicroPrecision", "MicroRecall", "WeightedF1", "WeightedJaccard",
              "WeightedPrecision", "WeightedRecall")
REGRESSION = ("MAE", "MAPE", "MSE", "R2", "RMSE", "RMSLE", "SMAPE")
# River's other metric classes, and why a progressive-validation report cannot take them
REFUSED = {
    **dict.fromkeys(("ClassificationReport", "ConfusionMatrix"), "reports a table, not a number"),
    **dict.fromkeys(("AdjustedMutualInfo", "AdjustedRand", "Completeness", "FowlkesMallows",
                     "Homogeneity", "MutualInfo", "NormalizedMutualInfo", "Rand", "VBeta"),
                    "compares two clusterings, not predictions with labels"),
    **dict.fromkeys(("FBeta", "MacroFBeta", "MicroFBeta", "MultiFBeta", "WeightedFBeta"),
                    "needs a beta (use F1, MacroF1, MicroF1 or WeightedF1)"),
}


def fitting(model) -> tuple[str, ...]:
    """The metric names that fit `model`: regression metrics for a regressor, multiclass ones
    for a multiclass classifier, binary and multiclass ones for a binary classifier, every
    one for any other estimator (River's `works_with` then decides).

    >>> from river_pa import PARegressor
    >>> fitting(PARegressor())
    ('MAE', 'MAPE', 'MSE', 'R2', 'RMSE', 'RMSLE', 'SMAPE')

    """
    from river import base

    if isinstance(model, base.Regressor):
        return REGRESSION
    if isinstance(model, base.Classifier):
        return MULTICLASS if model._multiclass else tuple(sorted(BINARY + MULTICLASS))
    return tuple(sorted(BINARY + MULTICLASS + REGRESSION))


def make_metrics(names: list[str], model, hint: str = "") -> list:
    """Fresh River metric objects for `names`, each one that fits `model` (`fitting`).

    Raises ValueError naming the metrics that fit: for an unknown name (suggesting the name
    that differs only in case), a River metric that reports no number or scores no
    predictions (`REFUSED`), or one that does not fit `model` (`hint` follows the model's name then). An
    unknown name is refused before river.metrics is imported.

    >>> from river_pa import PAClassifier
    >>> make_metrics(["Accuracy", "LogLoss"], PAClassifier())
    [Accuracy: 0.00%, LogLoss: 0.]
    >>> make_metrics(["accuracy"], PAClassifier())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown metric 'accuracy' (did you mean Accuracy?); choose one of Accuracy, ...
    >>> make_metrics(["ConfusionMatrix"], PAClassifier())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: metric ConfusionMatrix reports a table, not a number; choose one of Accuracy, ...
    >>> make_metrics(["MAE"], PAClassifier())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: metric MAE does not work with PAClassifier; choose one of Accuracy, ...

    """
    fit = fitting(model)
    choices = f"; choose one of {', '.join(fit)}"
    known = {n.lower(): n for n in (*BINARY, *MULTICLASS, *REGRESSION, *REFUSED)}
    for name in names:
        if name in REFUSED:
            raise ValueError(f"metric {name} {REFUSED[name]}{choices}")
        if name not in known.values():
            guess = known.get(name.lower())
            mean = f" (did you mean {guess}?)" if guess else ""
            raise ValueError(f"unknown metric {name!r}{mean}{choices}")
        if name not in fit:
            raise ValueError(f"metric {name} does not work with {type(model).__name__}"
                             f"{hint}{choices}")
    from river import metrics

    out = [getattr(metrics, name)() for name in names]
    for metric in out:
        if not metric.works_with(model):
            raise ValueError(f"metric {type(metric).__name__} does not work with "
                             f"{type(model).__name__}{hint}{choices}")
    return out
