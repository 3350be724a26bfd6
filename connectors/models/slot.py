"""The model a daemon serves (its slot), and what a snapshot of it in the model topic holds."""

from __future__ import annotations

import numpy as np
from river import base

from river_pa.connectors.codec import label_check_for
from river_pa.connectors.state import checkpoint

__all__ = ["BATCH_MIN", "MODEL_FIELDS", "ModelSlot", "check_model"]

# what a snapshot of the model topic holds (besides the model)
MODEL_FIELDS = {"learned": int, "events": int, "published_at_ms": int}

# events of one key tuple from which `ModelSlot.predict_many` predicts them in one call
BATCH_MIN = 4


def check_model(model) -> None:
    """Predict, then learn, one synthetic event on a clone of `model` (never the served one).

    A binary classifier learns ``True``, a regressor ``0.5``; other models only predict.
    ValueError naming the model and the error if it raises (e.g. a River optimizer given as
    a string, which fails only in `learn_one`).
    """
    clone, x = model.clone(), {"river_pa_check": 1.0}
    try:
        if hasattr(clone, "predict_proba_one"):
            clone.predict_proba_one(x)
        elif hasattr(clone, "predict_one"):
            clone.predict_one(x)
        if isinstance(clone, base.Regressor):
            clone.learn_one(x, 0.5)
        elif isinstance(clone, base.Classifier) and not clone._multiclass:
            clone.learn_one(x, True)
    except KeyError:  # a pipeline that selects its features (compose.Select) needs its own
        return  # keys: no synthetic event checks it; what it refuses is dead-lettered
    except Exception as exc:
        line = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise ValueError(f"model {type(model).__name__} fails on a synthetic event {x}: {line}") from None


class ModelSlot:
    """One served model: the live `model`, a `pristine` copy to start afresh from, what its
    checkpoints must match (`meta`), the check of its labels, its `name`, and its place in the
    model topic (the `snapshot` name, the `manifest` of the newest one there, the learner's
    `publisher`). A daemon has one slot; named models will have one each."""

    def __init__(self, model, snapshot: str = "model"):
        self.meta = checkpoint.metadata(model)
        checkpoint.trust(model)  # its own classes load (e.g. a --model outside river-pa)
        self.pristine = model.clone()
        self.model = self.pristine.clone()
        self.check_label = label_check_for(model)
        self.name = type(model).__name__
        self.snapshot = snapshot
        self.manifest: dict | None = None  # of the newest snapshot in the model topic
        self.publisher = None  # the learner's snapshots.Publisher
        self._kind(model)

    def _kind(self, model) -> None:
        self._is_classifier = hasattr(model, "predict_proba_one")
        self._label_from_proba = type(model).predict_one is base.Classifier.predict_one

    def adopt(self, model, name) -> None:
        """Serve `model`, a snapshot's, under `name` (a predictor following the learner's
        served model, another one than its --model after a promotion; a `name` that is not a
        string: the model's class)."""
        self.model = model
        self.name = name if isinstance(name, str) else type(model).__name__
        if type(model) is not type(self.pristine):
            self._kind(model)

    def reset(self) -> None:
        """Serve a model that has learned nothing."""
        self.model = self.pristine.clone()

    def predict(self, x: dict, with_proba: bool):
        """(prediction, class probabilities or None); the probabilities only of a classifier
        and when `with_proba` (they cost a fifth of a prediction and its conversion)."""
        if not self._is_classifier or not with_proba:
            return self.model.predict_one(x), None
        # floats always: River's sigmoid gives the int 0 or 1 beyond |m| > 30
        proba = {k: float(p) for k, p in self.model.predict_proba_one(x).items()}
        if self._label_from_proba:  # what River's Classifier.predict_one does, without a 2nd pass
            return (max(proba, key=proba.get) if proba else None), proba
        return self.model.predict_one(x), proba

    def batches(self) -> bool:
        """Whether `predict_many` predicts events of one key tuple in one call: for the
        learners whose `predict_many` is bit for bit their `predict_one` (river-pa's
        `PAClassifier` and `PARegressor` on numbers; not a subclass, a pipeline or string
        features); other models are predicted one event at a time. A River pipeline's own
        `predict_proba_many` (pandas) is not used: on the quick start's pipeline it took a
        median 7.9x the time of a `predict_proba_one` loop over batches of 100 and gave other
        probabilities for 377 of 2,000 events (`benchmarks/bench_categorical.py
        --pipeline-batch`)."""
        from river_pa.linear_model import PAClassifier, PARegressor

        kind = type(self.model)
        return (kind is PAClassifier or kind is PARegressor) and not self.model.categorical

    def predict_many(self, xs: list[dict], with_proba: bool) -> list[tuple | None]:
        """`predict` of the events of `xs` it can make in one call, in order: bit for bit
        the same (prediction, probabilities) pairs, None for the others (the caller predicts
        them one by one). Where `batches`, the events sharing a key tuple, at least
        `BATCH_MIN` of them with numbers only (int, float, bool), are predicted in one
        `predict_many` (and `predict_proba_many`) call over a float64 array (rows x keys).
        Raises what the model raises (nothing is changed: the caller predicts one by one to
        tell the event it refuses).

        >>> from river_pa import PAClassifier
        >>> slot = ModelSlot(PAClassifier())
        >>> slot.model.learn_one({"a": 1.0}, True)
        >>> xs = [{"a": float(i - 2)} for i in range(5)] + [{"b": 1.0}]
        >>> pairs = slot.predict_many(xs, True)
        >>> pairs[:5] == [slot.predict(x, True) for x in xs[:5]], pairs[5]
        (True, None)
        """
        out: list = [None] * len(xs)
        groups: dict[tuple, list[int]] = {}
        if self.batches():
            for i, x in enumerate(xs):
                groups.setdefault(tuple(x), []).append(i)
        for keys, rows in groups.items():
            values = _numbers([xs[i] for i in rows]) if len(rows) >= BATCH_MIN and keys else None
            if values is None and len(rows) >= BATCH_MIN and keys:  # a string, a None, a list
                rows = [i for i in rows if all(v.__class__ in _NUMBERS for v in xs[i].values())]
                values = _numbers([xs[i] for i in rows]) if len(rows) >= BATCH_MIN else None
            if values is not None:
                for i, pair in zip(rows, self._predict_array(values, keys, with_proba)):
                    out[i] = pair
        return out

    def _predict_array(self, values: np.ndarray, keys: tuple, with_proba: bool):
        """(prediction, probabilities or None) pairs of the rows of `values` (a `batches`
        model; columns named by `keys`), as `predict` gives them."""
        labels = self.model.predict_many(values, columns=keys).tolist()
        if not self._is_classifier or not with_proba:
            return zip(labels, [None] * len(labels))
        probas = self.model.predict_proba_many(values, columns=keys).tolist()
        return zip(labels, [{False: p0, True: p1} for p0, p1 in probas])


_NUMBERS = (float, int, bool)


def _numbers(xs: list[dict]) -> np.ndarray | None:
    """The values of `xs` (dicts of one key tuple) as an array (rows x keys) of numbers, or
    None when one is not a number."""
    try:
        values = np.array([tuple(x.values()) for x in xs])
    except ValueError:  # lists of several lengths
        return None
    return values if values.dtype.kind in "fib" and values.ndim == 2 else None
