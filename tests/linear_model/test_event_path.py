"""The per-event path of the linear learners (issue 18): exact results, whatever the cache
and the vocabulary do to go faster."""

from __future__ import annotations

import numpy as np
import pytest

from river_pa import PAClassifier, PARegressor


def python_pa_i(stream, C=1.0):
    """PA-I in plain Python over a dict of weights (the intercept a feature of value 1, sums
    in the dict's order, the intercept added last): the reference of
    benchmarks/bench_per_event.py, with its margins."""
    w, b, margins = {}, 0.0, []
    for x, y in stream:
        s = q = 0.0
        for k, v in x.items():
            s += w.get(k, 0.0) * v
            q += v * v
        margins.append(b + s)
        yy = 1.0 if y else -1.0
        loss = 1.0 - yy * (b + s)
        if loss > 0.0:
            step = min(C, loss / (q + 1.0)) * yy
            for k, v in x.items():
                w[k] = w.get(k, 0.0) + step * v
            b += step
    return {k: v for k, v in w.items() if v != 0.0}, b, margins


def text_stream(n=3000, active=12, vocabulary=400, seed=3):
    """Events of `active` keys drawn from a vocabulary: most events bring new keys early on,
    then fewer, as on the benchmark's text stream."""
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=vocabulary)
    stream = []
    for _ in range(n):
        cols = rng.choice(vocabulary, size=active, replace=False)
        vals = rng.random(active)
        stream.append(({f"k{c}": v for c, v in zip(cols.tolist(), vals.tolist())},
                       bool((hidden[cols] * vals).sum() > 0) ^ (rng.random() < 0.05)))
    return stream


def test_progressive_margins_and_weights_equal_the_plain_python_pa_i():
    stream = text_stream()
    weights, intercept, margins = python_pa_i(stream)
    model = PAClassifier(variant="PA-I", C=1.0)
    ours = []
    for x, y in stream:
        ours.append(model.decision_function_one(x))
        assert model.predict_one(x) == (ours[-1] > 0.0)
        model.learn_one(x, y)
    assert ours == margins  # bit for bit, every event
    assert model.weights == weights and model.intercept == intercept


@pytest.mark.parametrize("mutate", [
    lambda x: x.update(a=5.0),                    # a value changes
    lambda x: x.update(z=2.0),                    # a new key
    lambda x: x.pop("b"),                         # a key goes
    lambda x: x.update(b=x.pop("a")),             # same keys and values, another order
])
def test_a_dict_mutated_between_predict_and_learn_is_learned_as_it_is_then(mutate):
    history = [({"a": 1.0, "b": -2.0}, True), ({"a": 0.5, "c": 1.0}, False)]
    x = {"a": 0.25, "b": 3.0, "c": -1.0}
    predicted, fresh = PAClassifier(variant="PA"), PAClassifier(variant="PA")
    for model in (predicted, fresh):
        for xi, yi in history:
            model.learn_one(dict(xi), yi)
    predicted.predict_one(x)  # caches x's positions, values and margin
    mutate(x)
    predicted.learn_one(x, False)
    fresh.learn_one(dict(x), False)  # a copy: never seen by predict_one
    assert predicted.weights == fresh.weights and predicted.intercept == fresh.intercept
    assert predicted._index.positions == fresh._index.positions


class _RecordingDict(dict):
    """The vocabulary's key -> position dict, recording every write."""

    writes: list

    def __setitem__(self, key, value):
        self.writes.append(key)
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        self.writes.append(key)
        return super().setdefault(key, default)


@pytest.mark.parametrize("model", [PAClassifier(), PARegressor()], ids=type)
def test_learning_writes_only_the_new_keys_into_the_vocabulary(model):
    model.learn_one({"a": 1.0, "b": 2.0, "c": 3.0}, 1)
    model._index.positions = _RecordingDict(model._index.positions)
    model._index.positions.writes = []
    x = {"b": 1.0, "new1": 1.0, "a": 1.0, "new2": -1.0, "c": 0.5}
    model.predict_one(x)  # a lookup writes nothing
    assert model._index.positions.writes == []
    model.learn_one(x, 1)
    assert model._index.positions.writes == ["new1", "new2"]
    assert model._index.positions == {"a": 1, "b": 2, "c": 3, "new1": 4, "new2": 5}
    model.learn_one({"a": 0.0, "new3": 0.0}, 1)  # zero values move no weight: still inserted
    assert model._index.positions.writes == ["new1", "new2", "new3"]
    assert model._index.positions["new3"] == 6
