"""The model a daemon serves (its slot), and what a snapshot of it in the model topic holds."""

from __future__ import annotations

from river import base

from river_pa.connectors.codec import label_check_for
from river_pa.connectors.state import checkpoint

__all__ = ["MODEL_FIELDS", "ModelSlot", "check_model"]

# what a snapshot of the model topic holds (besides the model)
MODEL_FIELDS = {"learned": int, "events": int, "published_at_ms": int}


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
        self._is_classifier = hasattr(model, "predict_proba_one")
        self._label_from_proba = type(model).predict_one is base.Classifier.predict_one

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
