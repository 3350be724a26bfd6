"""Command-line values of `river-pa evaluate`: parameters, and the model and metrics they name.

A bad value raises `UsageError`, which the command line reports on one line with exit
status 2.

"""

from __future__ import annotations

import json

from river_pa import report

__all__ = ["DEFAULT_MODELS", "UsageError", "build_metrics", "build_model", "parse_params",
           "parse_value"]

DEFAULT_MODELS = {"binary": "PAClassifier", "multiclass": "PAMultiClassifier",
                  "regression": "PARegressor"}


class UsageError(ValueError):
    """A bad command line: reported on one line, exit status 2."""


def parse_value(text: str):
    """A command-line value: JSON if it parses (numbers, true/false/null, lists, quoted
    strings), None for none/None, booleans for True/False, else the text itself.

    >>> [parse_value(v) for v in ["0.5", "3", "true", "None", "PA-II", '"7"']]
    [0.5, 3, True, None, 'PA-II', '7']

    """
    special = {"none": None, "None": None, "True": True, "False": False}
    if text in special:
        return special[text]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(pairs: list[str], text: str | None) -> dict:
    """Merge ``--model-params JSON`` and ``--param key=value`` (the latter win)."""
    params = {}
    if text:
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--model-params is not valid JSON: {exc}") from None
        if not isinstance(params, dict):
            raise UsageError(f"--model-params must be a JSON object, got {text!r}")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key] = parse_value(value)
    return params


def build_model(name: str | None, params: dict, task: str):
    """The model named on the command line, or the task's default (`DEFAULT_MODELS`)."""
    from river_pa import registry

    try:
        return registry.make_model(name or DEFAULT_MODELS[task], params)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def build_metrics(names: list[str], model) -> list:
    """River's metric objects (`river_pa.report.make_metrics`); UsageError if one is unknown
    or does not work with `model`."""
    try:
        return report.make_metrics(names, model, hint="; the default metrics follow the "
                                   "data's task: give --metric names for this model, --task, "
                                   "or a --model for this task")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
