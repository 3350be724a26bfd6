"""Build learners by name: every estimator class that `river_pa` exports, or a factory path.

Used by the command line (`river-pa evaluate`, `river-pa serve`): a model is named either by a
river_pa class name (``PAClassifier``) or by an import path to any callable returning a River
estimator (``river.linear_model:LogisticRegression``, ``mypkg.models:make_pipeline``).

"""

from __future__ import annotations

import importlib
import inspect

from river import base

import river_pa

__all__ = ["learners", "make_model"]


def learners() -> dict[str, type]:
    """The river_pa estimator classes by name.

    >>> {"PAClassifier", "PARegressor"} <= set(learners())
    True

    """
    out = {}
    for name in river_pa.__all__:
        obj = getattr(river_pa, name)
        if inspect.isclass(obj) and issubclass(obj, base.Estimator):
            out[name] = obj
    return out


def _factory(name: str):
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot import model factory {name!r}: {exc}") from None
    if name in river_pa.__all__:  # imports this learner's family only, not all seven
        cls = getattr(river_pa, name)
        if issubclass(cls, base.Estimator):
            return cls
    known = learners()
    if name not in known:
        raise ValueError(
            f"unknown model {name!r}; choose one of {', '.join(sorted(known))}, "
            "or give an import path 'module:factory'"
        )
    return known[name]


def make_model(name: str, params: dict | None = None) -> base.Estimator:
    """A fresh estimator from a river_pa class name or a 'module:factory' path.

    Raises ValueError naming the valid choices for an unknown model or parameter, and the
    estimator's own ValueError for a bad parameter value.

    >>> make_model("PAClassifier", {"variant": "PA-II", "C": 0.5})
    PAClassifier (
      variant="PA-II"
      C=0.5
      learn_intercept=True
      n_features=None
    )
    >>> make_model("PAClassifier", {"c": 1})
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'c' for PAClassifier; valid parameters: C, learn_intercept, n_features, variant

    """
    factory = _factory(name)
    params = dict(params or {})
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None and not any(
        p.kind is p.VAR_KEYWORD for p in signature.parameters.values()
    ):
        valid = sorted(signature.parameters)
        for key in params:
            if key not in valid:
                raise ValueError(
                    f"unknown parameter {key!r} for {name}; valid parameters: {', '.join(valid)}"
                )
    model = factory(**params)
    if not isinstance(model, base.Estimator):
        raise ValueError(f"{name} did not return a River estimator, got {type(model).__name__}")
    return model
