"""The model slot (models/slot.py) serving a River pipeline with a categorical feature: its
predictions change nothing of the served pipeline, and the start-up check lets through a
pipeline that selects its own features."""

from __future__ import annotations

import pickle

import pytest
from river import compose, linear_model, optim, preprocessing

from river_pa import PAClassifier
from river_pa.connectors.models.slot import ModelSlot, check_model

EVENTS = [{"a": 0.5 * i, "b": 1.0 - 0.1 * i, "country": c}
          for i, c in enumerate(["FR", "DE", "FR", "IT", "ES", "DE"])]


def pipeline():
    return ((compose.Select("a", "b") | preprocessing.StandardScaler())
            + (compose.Select("country") | preprocessing.OneHotEncoder())) | PAClassifier()


def test_predictions_leave_the_served_pipeline_unchanged_to_the_byte():
    slot = ModelSlot(pipeline())
    for i, x in enumerate(EVENTS[:3]):
        slot.model.learn_one(x, i % 2 == 0)
    before = pickle.dumps(slot.model)
    served = [slot.predict(x, True) for x in EVENTS]  # countries unseen too (IT, ES)
    assert pickle.dumps(slot.model) == before
    assert all(set(proba) == {False, True} for _, proba in served)


def test_a_pipeline_that_selects_its_features_passes_the_start_check():
    check_model(pipeline())  # the synthetic event has none of its keys: KeyError, let through


def test_a_broken_model_still_fails_the_start_check():
    """A learning rate given as a string fails only in `learn_one`: the check learns."""
    with pytest.raises(ValueError, match="fails on a synthetic event"):
        check_model(linear_model.LogisticRegression(optimizer=optim.SGD("x")))
