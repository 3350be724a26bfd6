"""Build learners by name: every estimator class that `river_pa` exports, or an import path.

Used by the command line (`river-pa evaluate`, `river-pa serve`): a model is named either by a
river_pa class name (``PAClassifier``) or by an import path ``module:attribute`` whose attribute
is a River estimator class (``river.linear_model:LogisticRegression``, built with the given
parameters) or an estimator instance (``mymodels:model``, cloned). Nothing else is called, so
factories are refused: ``os:system`` with ``{"command": ...}`` ran the command, from a flag, a
TOML file or an environment variable alone. Naming a module imports it (its top-level code
runs), so name only trusted modules. The module is looked up in the current folder first, as
``python -m`` and ``python -c`` do (``./mymodels.py`` is found without ``PYTHONPATH=.``); the
folder is on ``sys.path`` only while that module is imported.

"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

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


def _estimator(name: str):
    """The estimator class or instance `name` refers to; nothing is called (no factories).
    ValueError, one line naming --model and `name`, for any name that resolves to none."""
    if ":" not in name:
        if name in river_pa.__all__:  # imports this learner's family only, not all seven
            cls = getattr(river_pa, name)
            if issubclass(cls, base.Estimator):
                return cls
        known = learners()
        if name not in known:
            raise _refused(name, f"unknown model; choose one of {', '.join(sorted(known))}, or "
                                 "give an import path 'module:EstimatorClass' or "
                                 "'module:estimator_instance'")
        return known[name]
    module, _, attr = name.partition(":")
    if not (all(part.isidentifier() for part in module.split(".")) and attr.isidentifier()):
        raise _refused(name, "not 'module:attribute' (an absolute dotted module name, no "
                             "relative import, and one attribute name)")
    try:
        found = _import(module)
    except ModuleNotFoundError as exc:
        where = f" (looked in the current folder {os.getcwd()} first, then sys.path)" \
            if module.split(".")[0] == exc.name else ""
        raise _refused(name, f"{exc}{where}") from None
    except ImportError as exc:
        raise _refused(name, str(exc)) from None
    except (Exception, SystemExit) as exc:  # its top-level code raised (or exited)
        raise _refused(name, f"importing {module} raised {type(exc).__name__}: {exc}") from None
    if not hasattr(found, attr):  # say which file: a module of that name may shadow the user's
        where = getattr(found, "__file__", None) or "no file"
        raise _refused(name, f"module {module!r} ({where}) has no attribute {attr!r}")
    obj = getattr(found, attr)
    if isinstance(obj, base.Estimator) or (inspect.isclass(obj) and issubclass(obj, base.Estimator)):
        return obj
    raise _refused(name, f"a {type(obj).__name__}, not a River estimator class or instance "
                         "(factories are not called: name the class, or a module-level instance)")


def _import(module: str):
    """Import `module` with the current folder first on sys.path, for this import only (the
    `river-pa` script's sys.path has no current folder; `python -m river_pa` takes it off)."""
    folder = os.getcwd()
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(folder)  # the first occurrence: the one inserted above


def _refused(name: str, why: str) -> ValueError:
    return ValueError(f"--model {name!r}: {why}".splitlines()[0])


def _check_params(name: str, cls, params: dict) -> None:
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return
    valid = sorted(signature.parameters)
    for key in params:
        if key not in valid:
            raise ValueError(
                f"unknown parameter {key!r} for {name}; valid parameters: {', '.join(valid)}"
            )


def make_model(name: str, params: dict | None = None) -> base.Estimator:
    """A fresh estimator from a river_pa class name or a 'module:attribute' path.

    The attribute must be a River estimator class (checked with issubclass before anything is
    called; built with `params`) or an estimator instance (cloned with `params`). Raises
    ValueError naming the valid choices for an unknown model or parameter, or saying why the
    attribute is refused (one line naming --model and `name`, also for a module that cannot
    be imported or raises on import), and the estimator's own ValueError for a bad parameter
    value.

    >>> make_model("PAClassifier", {"variant": "PA-II", "C": 0.5})
    PAClassifier (
      variant="PA-II"
      C=0.5
      learn_intercept=True
      n_features=None
      calibration=None
      categorical=False
    )
    >>> make_model("PAClassifier", {"c": 1})
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'c' for PAClassifier; valid parameters: C, calibration, categorical, learn_intercept, n_features, variant
    >>> make_model("os:system", {"command": "echo hello"})
    Traceback (most recent call last):
    ...
    ValueError: --model 'os:system': a builtin_function_or_method, not a River estimator class or instance (factories are not called: name the class, or a module-level instance)

    """
    obj = _estimator(name)
    params = dict(params or {})
    if isinstance(obj, base.Estimator):  # a module-level instance: cloned, never called
        _check_params(name, type(obj), params)
        return obj.clone(params)
    _check_params(name, obj, params)
    return obj(**params)
