"""River metrics by class name: the one lookup of `evaluate` and `serve`."""

from __future__ import annotations

__all__ = ["make_metrics", "metric_names"]


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


def _river_metric_classes() -> dict[str, type]:
    from river import metrics

    return {name: obj for name in dir(metrics)
            if isinstance(obj := getattr(metrics, name), type)
            and issubclass(obj, metrics.base.Metric) and obj is not metrics.base.Metrics}


def make_metrics(names: list[str], model, hint: str = "") -> list:
    """Fresh River metric objects for `names`, each checked against `model`.

    Raises ValueError naming the valid choices for an unknown name, and one naming the model
    when a metric does not work with it (`hint` is appended to that message).

    >>> from river_pa import PAClassifier
    >>> make_metrics(["Accuracy", "LogLoss"], PAClassifier())
    [Accuracy: 0.00%, LogLoss: 0.]
    >>> make_metrics(["Nope"], PAClassifier())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown metric 'Nope'; choose one of Accuracy, AdjustedMutualInfo, ...
    >>> make_metrics(["MAE"], PAClassifier())
    Traceback (most recent call last):
    ...
    ValueError: metric MAE does not work with PAClassifier

    """
    classes = _river_metric_classes()
    out = []
    for name in names:
        if name not in classes:
            raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(sorted(classes))}")
        metric = classes[name]()
        if not metric.works_with(model):
            raise ValueError(f"metric {name} does not work with {type(model).__name__}{hint}")
        out.append(metric)
    return out
