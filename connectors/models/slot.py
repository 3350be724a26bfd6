"""The model a daemon serves, and what a snapshot of it in the model topic holds."""

from __future__ import annotations

from river import base

__all__ = ["MODEL_FIELDS", "check_model"]

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
    except Exception as exc:
        line = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise ValueError(f"model {type(model).__name__} fails on a synthetic event {x}: {line}") from None
