"""The per-event path of the linear learners (issue 18): exact results, whatever the cache
and the vocabulary do to go faster."""

from __future__ import annotations

import copy
import math
import pickle
import weakref

import numpy as np
import pytest

from river_pa import PAClassifier, PARegressor
from river_pa.linear_model import base as linear_base


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
    lambda x: x.update(d=x.pop("a")),             # a key goes, another comes: same size
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


@pytest.mark.parametrize("between", [
    {"a": 2.0, "e": 1.0},  # the vocabulary grows: "e" is new, as in x
    {"a": 2.0, "b": 1.0},  # no new key: the weights of x's keys move
])
def test_an_event_learned_between_predict_and_learn_counts(between):
    """predict_one(x), learn_one(other), learn_one(x) learns x as the model then is."""
    x = {"a": 0.25, "e": 3.0, "b": -1.0}
    predicted, fresh = PAClassifier(variant="PA"), PAClassifier(variant="PA")
    for model in (predicted, fresh):
        model.learn_one({"a": 1.0, "b": -2.0}, True)
    predicted.predict_one(x)
    for model in (predicted, fresh):
        model.learn_one(dict(between), False)
    predicted.learn_one(x, True)
    fresh.learn_one(dict(x), True)
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


# -- the C step (river_pa/linear_model/_dictstep.c) against the Numba path ----------------------

def test_the_c_step_is_built():
    """README's install builds it (a C compiler is needed); without it every number this
    project gives for per-event speed is wrong (the tests of the C step below skip)."""
    assert linear_base._c_learn is not None and PAClassifier()._dict_step


needs_c_step = pytest.mark.skipif(linear_base._c_learn is None, reason="the C step is not built")


class _Weird:
    """A key that is not a str: such events take the Numba path."""

    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, _Weird) and other.name == self.name


def mixed_stream(n, seed):
    """Events of str keys with float, int and bool values (the C step), interleaved with
    events it leaves to the Numba path: numpy values, a huge int, a non-str key, a non-finite
    or a non-numeric value (an error), an empty dict; sample weights 0, 0.5, 1 and 2."""
    rng = np.random.default_rng(seed)
    events = []
    for i in range(n):
        keys = rng.choice(60, size=rng.integers(0, 12), replace=False)
        x = {f"k{k}": float(rng.normal()) * 10.0 ** rng.integers(-3, 3) for k in keys.tolist()}
        kind = i % 11
        if kind == 1 and x:
            x[next(iter(x))] = int(rng.integers(-5, 5))
        elif kind == 2:
            x["flag"] = bool(rng.random() < 0.5)
        elif kind == 3 and x:
            x[next(iter(x))] = np.float64(1.5)
        elif kind == 4:
            x["huge"] = 2**70 if rng.random() < 0.5 else 10**400
        elif kind == 5:
            x[_Weird("w")] = 1.0
            x[7] = 0.5
        elif kind == 6:
            x["bad"] = float("nan") if rng.random() < 0.5 else "text"
        events.append((x, float(rng.normal()), [0.0, 0.5, 1.0, 2.0][i % 4]))
    return events


def _run(model, stream, classify):
    """Per event: the prediction, then learn_one's outcome (None or the error's text)."""
    out = []
    for x, target, w in stream:
        y = target > 0.0 if classify else target
        try:
            out.append(model.decision_function_one(x) if classify else model.predict_one(x))
        except (TypeError, ValueError) as error:
            out.append(str(error))
        try:
            model.learn_one(x, y, w)
            out.append(None)
        except (TypeError, ValueError) as error:
            out.append(str(error))
    return out


CONFIGS = [
    (PAClassifier, {"variant": "PA"}),
    (PAClassifier, {"variant": "PA-I", "C": 0.1}),
    (PAClassifier, {"variant": "PA-II", "C": 0.5, "learn_intercept": False}),
    (PARegressor, {"variant": "PA", "epsilon": 0.0}),
    (PARegressor, {"variant": "PA-I", "C": 0.01, "epsilon": 0.1}),
    (PARegressor, {"variant": "PA-II", "C": 1.0, "epsilon": 0.5, "learn_intercept": False}),
]


@needs_c_step
@pytest.mark.parametrize("cls, params", CONFIGS, ids=lambda c: getattr(c, "__name__", str(c)))
@pytest.mark.parametrize("seed", [0, 1])
def test_the_c_step_gives_the_numba_paths_bits(cls, params, seed, monkeypatch):
    stream = mixed_stream(800, seed)
    fast = cls(**params)
    assert fast._dict_step
    with monkeypatch.context() as patch:
        patch.setattr(linear_base, "_c_learn", None)
        slow = cls(**params)
        assert not slow._dict_step
        expected = _run(slow, stream, cls is PAClassifier)
    got = _run(fast, stream, cls is PAClassifier)
    assert got == expected  # every margin bit for bit, the same errors
    assert sum(isinstance(o, str) for o in got) > 50  # errors were met, and agreed on
    assert fast._w.tobytes()[: 8 * fast._index.size] == slow._w.tobytes()[: 8 * slow._index.size]
    assert fast.intercept == slow.intercept and fast._index.positions == slow._index.positions


@needs_c_step
def test_past_max_keys_or_float64_the_c_step_changes_nothing_and_the_error_is_raised():
    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({"a": 1.0, "b": 2.0}, 2.0)
    model._index.max_keys = 3
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="past max_keys=3"):
        model.learn_one({"a": 1.0, "c": 1.0, "d": 1.0}, 0.0)
    # a hard step to 1e300 on values of 1e-150 needs weights of 1e450; "c" is new
    with pytest.raises(ValueError, match="beyond the float64 range"):
        model.learn_one({"a": 1e-150, "c": 1e-150}, 1e300)
    assert pickle.dumps(model) == before


@needs_c_step
def test_a_learned_model_pickles_with_its_c_step():
    stream = mixed_stream(300, 5)
    model = PAClassifier()
    _run(model, stream[:150], True)
    copy = pickle.loads(pickle.dumps(model))
    assert copy._dict_step
    assert _run(copy, stream[150:], True) == _run(model, stream[150:], True)
    assert copy.weights == model.weights


class Meddler:
    """A vocabulary key of a user's class that hashes like the str `like`, so that looking
    `like` up runs its __eq__: that calls `act()` and answers False, every time, or with
    `once` only the first time after `armed` is set."""

    def __init__(self, like: str, act, once: bool = False):
        self.like, self.act, self.once, self.armed = like, act, once, not once

    def __hash__(self):
        return hash(self.like)

    def __eq__(self, other):
        if self.armed:
            self.armed = not self.once
            self.act()
        return False


@needs_c_step
def test_learn_one_after_predict_one_looks_the_keys_up_once():
    """The vocabulary holds a key that hashes like "a": every lookup of "a" runs its __eq__
    (as many times as the probe meets it: `per_lookup`, which depends on the hash seed).
    learn_one(x) after predict_one(x) takes the scan predict_one made, while `x` holds the
    same key objects in the same order; a copy of `x` is looked up again."""
    calls = []
    model = PAClassifier(variant="PA")
    model.learn_one({Meddler("a", lambda: calls.append(1)): 1.0}, True)
    model.learn_one({"a": 1.0, "b": 1.0}, False)
    calls.clear()
    model._index.positions.get("a")
    per_lookup = len(calls)
    assert per_lookup >= 1
    calls.clear()
    x = {"a": 0.5, "b": 2.0}
    model.predict_one(x)
    assert len(calls) == per_lookup
    model.learn_one(x, True)
    assert len(calls) == per_lookup
    model.predict_one(x)
    x["a"] = -1.0  # a value changes: read again, the positions kept
    model.learn_one(x, True)
    assert len(calls) == 2 * per_lookup
    model.predict_one(x)
    model.learn_one(dict(x), False)  # another dict: scanned again
    assert len(calls) == 4 * per_lookup
    model.learn_one(x, False)  # the scan was spent by learning
    assert len(calls) == 5 * per_lookup


@needs_c_step
def test_the_scan_kept_for_learn_one_does_not_keep_the_event_alive():
    """The event's address is a quick test, not a reference: a dict the user drops after
    predict_one goes (with what it holds) at once, not at the model's next call."""

    class Probe:
        pass

    model = PAClassifier(variant="PA")
    model.learn_one({"a": 1.0}, True)
    x = {"a": 2.0}
    model.predict_one(x)
    x["p"] = probe = Probe()
    gone = weakref.ref(probe)
    del x, probe
    assert gone() is None


@needs_c_step
@pytest.mark.parametrize("change", ["value", "shrink"])
def test_an_event_a_lookup_changes_is_learned_as_it_was_or_as_it_is(change):
    """A stored key's __eq__ changes the event once, during the C step's lookups. A value
    changed in place is not seen: the event is learned as it was when the call began (its
    keys and values were read first). Keys added or removed are: the C step leaves the event
    to the Numba path, which reads it as it is then (before, the C step learned the event as
    it was, or read values past its end on the Numba path)."""
    x = {"b": 2.0, "a": 0.5}
    before = dict(x)

    def act():
        if change == "value":
            x["b"] = -4.0
        else:
            del x["b"]

    models = [PARegressor(variant="PA", epsilon=0.0) for _ in range(2)]
    meddler = Meddler("a", act, once=True)
    for model in models:
        model.learn_one({meddler: 1.0, "a": 1.0, "b": 1.0}, 1.0)
    meddler.armed = True
    margin = models[0].predict_one(x)
    assert not meddler.armed  # it ran, during the lookup
    seen = before if change == "value" else dict(x)
    assert margin == models[1].predict_one(seen)
    meddler.armed = True
    x.update(before)
    models[0].learn_one(x, 3.0)
    models[1].learn_one(before if change == "value" else {"a": 0.5}, 3.0)
    assert models[0].weights == models[1].weights
    assert models[0].intercept == models[1].intercept


@needs_c_step
@pytest.mark.parametrize("copy_model", [
    copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m)),
    lambda m: m.clone(include_attributes=True),
], ids=["deepcopy", "pickle", "clone"])
def test_a_model_copied_between_predict_and_learn_learns_alike(copy_model):
    """The scan kept for learn_one is a cache: copies get an empty one and learn the event
    as the model does."""
    model = PAClassifier(variant="PA")
    model.learn_one({"a": 1.0, "b": -2.0}, True)
    x = {"a": 0.25, "b": 3.0, "c": -1.0}
    model.predict_one(x)
    twin = copy_model(model)
    assert twin._dict_step is not None
    twin.learn_one(x, False)
    model.learn_one(x, False)
    assert twin.weights == model.weights and twin.intercept == model.intercept


@needs_c_step
@pytest.mark.parametrize("n_keys", [3, 129])  # buffers on the stack, and from the heap
@pytest.mark.parametrize("change", ["clear", "shrink"])
def test_a_key_whose_eq_changes_the_event_during_the_lookup_crashes_nothing(n_keys, change):
    """A stored key of a user's class whose hash meets a str key's runs its __eq__ inside
    the vocabulary lookup; here it empties the event, or takes two keys the lookup has not
    reached. Nothing crashes, and no weight outside the event moves."""
    keys = [f"k{i}" for i in range(n_keys)]

    def act():
        if change == "clear":
            x.clear()
        else:
            x.pop(keys[-1], None)
            x.pop(keys[-2], None)

    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({Meddler(keys[0], act): 1.0}, 0.0)
    model.learn_one({"p": 1.0, "r": 1e6}, 1.0)
    outside = model.weights
    for t in range(2):
        x = {k: 1.0 for k in keys}
        model.learn_one(x, 1.0 + t)
        assert set(model.weights) - set(outside) <= set(keys)
        assert {k: model.weights[k] for k in outside} == outside


def test_an_event_changed_during_the_lookup_is_refused_on_the_numba_path(monkeypatch):
    """The Numba path reads the values after the keys' lookup: an event that lost keys in
    between is refused (before, the kernels read past the end of its values)."""
    monkeypatch.setattr(linear_base, "_c_learn", None)
    keys = ["a", "b", "c"]
    model = PARegressor(variant="PA")
    model.learn_one({Meddler("b", lambda: x.pop("c", None)): 1.0}, 0.0)
    x = dict.fromkeys(keys, 1.0)
    with pytest.raises(ValueError, match="the event changed while its 3 keys were looked up"):
        model.learn_one(x, 2.0)


@needs_c_step
def test_the_c_step_reads_weights_it_cannot_write():
    """Read-only weights (a protocol-5 pickle's out-of-band buffer) predict; learning on them
    raises, as on the Numba path."""
    model = PAClassifier()
    model.learn_one({"a": 1.0}, True)
    model._w.setflags(write=False)
    assert model.predict_one({"a": 1.0}) is True
    with pytest.raises(ValueError, match="read-only"):
        model.learn_one({"a": -1.0}, True)


@needs_c_step
@pytest.mark.parametrize("max_keys", [math.inf, np.int64(100), 1e6, 2**64, -1])
def test_max_keys_of_any_number_learns_as_on_the_numba_path(max_keys, monkeypatch):
    models = []
    for c_step in (True, False):
        with monkeypatch.context() as patch:
            if not c_step:
                patch.setattr(linear_base, "_c_learn", None)
            model = PAClassifier()
        model._index.max_keys = max_keys
        try:
            model.learn_one({"a": 1.0, "b": 2.0}, True)
            model.learn_one({"a": 1.0}, False)  # no new key: the C step whatever max_keys is
        except ValueError as error:
            models.append(str(error))
        else:
            models.append(model.weights)
    assert models[0] == models[1]


@needs_c_step
def test_an_int_subclass_with_its_own_float_takes_the_numba_path():
    """The Numba path packs float(value), which such a subclass overrides: the C step does
    not take it (bool, which cannot be subclassed, it takes)."""

    class Scaled(int):
        def __float__(self):
            return 42.0

    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({"a": Scaled(1)}, 42.0 * 42.0)
    assert model.weights == {"a": 42.0}
    model.learn_one({"b": True}, 2.0)
    assert model.weights["b"] == 2.0


def _vocabulary_is_sound(model) -> bool:
    """Positions 1..n, once each, all inside the weights."""
    held = sorted(model._index.positions.values())
    return held == list(range(1, len(held) + 1)) and len(held) < len(model._w)


@needs_c_step
def test_a_key_whose_eq_makes_the_model_learn_during_the_lookup_keeps_the_vocabulary_sound():
    """That learning inserts 50 keys while the C step scans an event of 20 new ones: the
    C step leaves the event to the Numba path, which gives every key a position inside the
    weights (before, 20 positions past their end: a later event read and wrote there)."""
    meddler = Meddler("k0", lambda: model.learn_one({f"z{i}": 1.0 for i in range(50)}, 1.0),
                      once=True)
    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({meddler: 1.0}, 0.0)
    meddler.armed = True
    model.learn_one({f"k{i}": 1.0 for i in range(20)}, 1.0)
    assert _vocabulary_is_sound(model) and len(model._index.positions) == 71


@needs_c_step
def test_an_event_changed_to_the_same_size_during_the_lookup_keeps_the_vocabulary_sound():
    """A key the scan passed goes and another comes (the dict resizes): the keys inserted
    are the ones scanned, each at a position of its own (before, an existing key was moved
    onto a position another key held)."""
    x = {}

    def act():
        del x["k0"]
        x["new"] = 1.0

    meddler = Meddler("k1", act, once=True)
    model = PARegressor(variant="PA", epsilon=0.0, learn_intercept=False)
    model.learn_one({meddler: 1.0}, 0.0)
    model.learn_one({"k1": 1.0, "k3": 1.0, "k4": 1.0, "new": 1.0}, 1.0)
    x.update(dict.fromkeys(["k0", "k1", "k2", "k3", "k4"], 1.0))
    meddler.armed = True
    model.learn_one(x, 5.0)
    assert _vocabulary_is_sound(model)
    assert {"k1": 2, "k3": 3, "k4": 4, "new": 5}.items() <= model._index.positions.items()
