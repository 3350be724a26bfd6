"""Tasks and targets: the task of a data set's labels and the targets the task takes.

`infer_task` reads a task from labels (two distinct labels: binary; numbers: regression;
anything else: multiclass; a single label of -1, 0 or +1 counts as binary) and `task_reason`
says why, for the summary. `Targets` converts labels chunk after chunk, with the task and the
binary labels fixed by the first chunk: a binary task maps the larger of its two labels (in
sort order) to True; multiclass labels stay as they are (integral numbers as int); regression
targets are floats. `target_array` gives targets as the compiled path takes them.

"""

from __future__ import annotations

import math

import numpy as np

from river_pa.evaluate.files import DataError

__all__ = ["Targets", "infer_task", "target_array", "task_reason"]


def infer_task(labels: list) -> str:
    distinct = set(labels)
    if len(distinct) == 2 or distinct <= {-1, 1} or distinct <= {0, 1}:
        return "binary"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct):
        return "regression"
    return "multiclass"


def task_reason(task: str, labels: list) -> str:
    """Why `infer_task` took `task` from `labels` (the first chunk's), for the summary.

    >>> task_reason("regression", [1, 2, 3, 2])
    'inferred: 3 distinct numeric labels in the first 4 events (1, 2, 3), not two: give --task multiclass if they are classes'

    """
    distinct = sorted(set(labels), key=_sort_key)
    shown = ", ".join(map(repr, distinct[:5])) + (", ..." if len(distinct) > 5 else "")
    where = f"in the first {len(labels):,} events ({shown})"
    if task == "binary":
        return f"inferred: {len(distinct)} distinct labels {where}"
    if task == "regression":
        return (f"inferred: {len(distinct)} distinct numeric labels {where}, not two: give "
                "--task multiclass if they are classes")
    return f"inferred: {len(distinct)} distinct labels {where}, not all numbers"


def _sort_key(value):
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))


class Targets:
    """Converts labels to the task's targets, chunk after chunk, with the task and the binary
    labels fixed by the first chunk (`first`): a binary task maps the larger of its two labels
    (in sort order) to True; a single label of -1 or 0 is False, the other one True."""

    def __init__(self, first: list, task: str | None, where: str):
        self.where = where
        self.task = task or infer_task(first)
        self.labels = sorted(set(first), key=_sort_key)
        if self.task == "binary":
            if len(self.labels) > 2:
                raise DataError(f"{where}: a binary task needs two labels, found "
                                f"{len(self.labels)}: {self.labels[:5]}...")
            single = len(self.labels) == 1 and self.labels[0] in (-1, 0)
            self.positive = 1 if single else self.labels[-1]

    def convert(self, labels: list, seen: int) -> list:
        """The targets of `labels`, events `seen + 1`... of the data."""
        if self.task == "binary":
            new = set(labels).difference(self.labels)
            if new:
                self._check_binary(labels, new, seen)
            return [v == self.positive for v in labels]
        if self.task == "regression":
            out = []
            for i, v in enumerate(labels):
                try:
                    out.append(float(v))
                except (TypeError, ValueError):
                    out.append(math.nan)
                if not math.isfinite(out[-1]):
                    raise DataError(f"{self.where}: event {seen + i + 1}: regression target "
                                    f"{v!r} is not a finite number")
            return out
        return [int(v) if isinstance(v, float) and v.is_integer() else v for v in labels]

    def _check_binary(self, labels: list, new: set, seen: int) -> None:
        known = set(self.labels)
        for i, v in enumerate(labels):
            if v in known:
                continue
            known.add(v)
            negatives = known - {self.positive}
            if len(negatives) > 1 or _sort_key(v) > _sort_key(self.positive):
                raise DataError(
                    f"{self.where}: event {seen + i + 1}: label {v!r}: a binary task takes two "
                    f"labels, the larger one True, and {sorted(known, key=_sort_key)} were "
                    "met (the task was inferred from the first chunk; give --task)")
        self.labels = sorted(known, key=_sort_key)


def target_array(y: list, task: str) -> np.ndarray:
    """Targets as the compiled path takes them: float64, binary ones as +1/-1."""
    if task == "binary":
        return np.where(np.asarray(y, dtype=bool), 1.0, -1.0)
    if task == "regression":
        return np.asarray(y, dtype=np.float64)
    return np.zeros(len(y))  # multiclass: the compiled path does not use targets
