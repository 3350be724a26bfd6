"""The predictor's batch path (roles/predictor.py `_serve_batch`, models/slot.py `predict_many`)
on the fake client of fake_kafka.py: the same predictions, byte for byte, in the same order,
the same dead letters with the same reasons and the same committed offsets as the one-record
path of the daemon, for bad records mixed into batches, for models predicted in one call and
for those predicted one event at a time; a model that raises on one event of a batch loses
only that one."""

from __future__ import annotations

import json
import math
import random
import re

import pytest
from river import compose, preprocessing

from river_pa import PAClassifier, PARegressor
from river_pa.connectors.config import ServeConfig
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.models.slot import ModelSlot
from river_pa.connectors.roles.predictor import BATCH_RECORDS, Predictor

from tests.connectors.fake_kafka import TP

PARTITIONS = 3


class NoModelTopic:
    """The model topic's reader of a predictor that has its model (no progress record)."""

    progress = None

    def close(self) -> None:
        pass


class ServedPredictor(Predictor):
    """A predictor serving `model` as published version 1, without a model topic."""

    def __init__(self, cfg: ServeConfig, model):
        super().__init__(cfg, model)
        self.slot.model = model

    def _start(self) -> None:
        self.slot.manifest = {"term": 1, "version": 1}
        self.snapshot = {"learned": 7, "events": 9, "published_at_ms": 0, "version": 1}
        self.model_reader = NoModelTopic()

    def _step(self) -> None:  # the model topic is not read: the model stays
        Daemon._step(self)


class OneByOnePredictor(ServedPredictor):
    """The same predictor with the daemon's one-record path (the reference)."""

    _process_ready = Daemon._process_ready


def _trained(model, n: int = 60):
    rng = random.Random(3)
    for _ in range(n):
        x = {"a": rng.uniform(-2, 2), "b": rng.uniform(-2, 2)}
        model.learn_one(x, x["a"] - x["b"] if isinstance(model, PARegressor) else x["a"] > x["b"])
    return model


def _stream(n: int) -> list[bytes]:
    """Record values: mostly events of keys a, b; some of other keys and value types (ints,
    booleans, strings, unseen keys, no key), and bad records of every kind, spread so every
    batch mixes them."""
    rng = random.Random(11)
    odd = [
        b"{", b"[]", b'{"x": {"a": 1.0}}', b'{"id": "n", "x": {"a": NaN}}', None,
        b'{"id": "big", "x": {"a": 1e200}}', b'{"id": "s", "x": {"a": 1.0, "b": "FR"}}',
        b'{"id": 5, "x": {"a": 1, "b": 2}, "ts": 1700000000000}',
        b'{"id": "bool", "x": {"a": true, "b": false}}', b'{"id": "e", "x": {}}',
        b'{"id": "c", "x": {"a": 0.5, "b": 0.25, "c": 3.0}}', b'{"id": "l", "x": {"a": [1, 2]}}',
        b'{"id": "u", "x": {"zz": 2.5}}', b'{"id": "y", "x": {"a": 0.1, "b": 0.2}, "y": true}',
        b'{"id": "t", "x": {"a": 0.1, "b": 0.2}, "ts": "soon"}', b"x" * 2_000,
    ]
    values = []
    for i in range(n):
        if i % 9 == 4:
            values.append(odd[(i // 9) % len(odd)])
        elif i % 13 == 6:  # a second key tuple, in groups large enough for one call
            values.append(json.dumps({"id": f"e{i}", "x": {
                "b": rng.uniform(-3, 3), "a": rng.randint(-5, 5), "c": rng.random()}}).encode())
        else:
            values.append(json.dumps({"id": f"e{i}", "x": {
                "a": rng.uniform(-3, 3), "b": rng.uniform(-3, 3)}}).encode())
    return values


def _serve(kind, cluster, model, values: list[bytes], tmp_path) -> dict:
    """What `kind` of predictor serving `model` leaves in `cluster` after processing
    `values` (spread over PARTITIONS partitions): its predictions (without their clock
    field) and dead letters in the order sent, the offsets it committed, its counts."""
    events = cluster.topic("ev", PARTITIONS)
    for i, value in enumerate(values):
        cluster.append(events, value, f"k{i}".encode(), timestamp=i, partition=i % PARTITIONS)
    cfg = ServeConfig(model="PAClassifier", role="predict", events_topic=events,
                      predictions_topic="preds", metrics_topic=None, report_path=None,
                      checkpoint_path=str(tmp_path / "ckpt"), max_record_bytes=1_000,
                      checkpoint_every=50)
    daemon = kind(cfg, model)
    step = daemon._step

    def step_then_check():
        step()
        daemon.stopping = daemon.processed_this_run >= len(values)

    daemon._step = step_then_check
    assert daemon.run() == 0
    predictions = []
    for record in cluster.logs.get(TP("preds", 0), []):  # the bytes sent, but the clock's
        value, clocks = re.subn(rb',"predicted_at_ms":\d+,', b",", record.value)
        assert clocks == 1
        predictions.append((record.key, value))
    letters = [(r.key, r.value, r.headers) for r in cluster.logs.get(TP("dead-letters", 0), [])]
    return {"predictions": predictions, "dead_letters": letters,
            "committed": dict(cluster.committed), "counts": dict(daemon.stats.counts)}


def _hashed():
    return PAClassifier(n_features=4)  # two keys collide in most events


def _pipeline():
    return preprocessing.StandardScaler() | PAClassifier()


@pytest.mark.parametrize("make", [PAClassifier, PARegressor, _hashed, _pipeline,
                                  lambda: PAClassifier(calibration="temperature")],
                         ids=["classifier", "regressor", "hashed", "pipeline", "calibrated"])
def test_a_batch_is_served_exactly_as_one_record_at_a_time(make, fake_clients, tmp_path,
                                                           monkeypatch):
    from tests.connectors.fake_kafka import Cluster

    calls = []  # rows predicted in one call
    in_one_call = ModelSlot._predict_array
    monkeypatch.setattr(ModelSlot, "_predict_array", lambda self, values, *args: (
        calls.append(len(values)), in_one_call(self, values, *args))[1])
    values = _stream(3 * BATCH_RECORDS + 17)
    model = _trained(make())
    batched = _serve(ServedPredictor, fake_clients, model.clone(include_attributes=True),
                     values, tmp_path)
    fake_clients.__dict__.update(Cluster().__dict__)  # the fake client's cluster, emptied
    reference = _serve(OneByOnePredictor, fake_clients, model.clone(include_attributes=True),
                       values, tmp_path)
    assert batched == reference
    assert (sum(calls) > len(values) // 2) == ModelSlot(model).batches()
    reasons = {dict(h)["reason"] for _, _, h in batched["dead_letters"]}
    assert {b"invalid_json", b"not_an_object", b"missing_id", b"non_finite", b"undecodable",
            b"out_of_range", b"bad_ts", b"oversize", b"feature_rejected"} <= reasons
    assert len(batched["predictions"]) + len(batched["dead_letters"]) == len(values)
    assert sum(batched["committed"].values()) == len(values)


def test_events_predicted_in_one_call_are_those_of_predict_one():
    """`predict_many` of events of one key tuple (one call) equals `predict` of each, bit for
    bit: ints, booleans, unseen keys, colliding hashed keys and both link functions."""
    rng = random.Random(5)
    xs = [{"a": rng.uniform(-1e3, 1e3), "b": rng.choice([True, False, 2**52 + 1, -7]),
           "new": rng.random()} for _ in range(50)]
    for model in (PAClassifier(), PAClassifier(n_features=2), PARegressor(),
                  PAClassifier(calibration="temperature")):
        slot = ModelSlot(_trained(model))
        assert slot.batches()
        for with_proba in (True, False):
            got = slot.predict_many(xs, with_proba)
            want = [slot.predict(x, with_proba) for x in xs]
            assert repr(got) == repr(want)
            assert not any(isinstance(v, float) and math.isnan(v) for v, _ in got)


class Mine(PAClassifier):
    """A subclass: its predictions may be its own."""


def test_an_event_of_strings_leaves_the_others_of_its_key_tuple_in_one_call():
    slot = ModelSlot(_trained(PAClassifier()))
    xs = [{"a": 0.5 * i, "b": 1.0} for i in range(6)]
    xs[3] = {"a": "FR", "b": 1.0}  # refused by the model, alone
    pairs = slot.predict_many(xs, True)
    assert pairs[3] is None
    kept = (0, 1, 2, 4, 5)
    assert [pairs[i] for i in kept] == [slot.predict(xs[i], True) for i in kept]


def test_a_pipeline_or_a_subclass_is_predicted_one_event_at_a_time():
    for model in (compose.Pipeline(preprocessing.StandardScaler(), PAClassifier()), Mine(),
                  PAClassifier(categorical=True)):
        assert not ModelSlot(model).batches()


def test_a_model_that_raises_on_one_event_of_a_batch_loses_only_that_one(
        fake_clients, tmp_path, monkeypatch):
    """The batch call raises (its one bad event): each event of that batch is predicted
    alone, the bad one dead-lettered as model_error as before, the others served."""
    calls = []

    def refuse_many(self, X, *, columns=None):
        calls.append(len(X))
        raise ValueError("one row refused")

    one = PAClassifier.predict_proba_one

    def refuse_one(self, x):
        if x.get("a") == 1 and x.get("b") == 2:
            raise ValueError("this event refused")
        return one(self, x)

    monkeypatch.setattr(PAClassifier, "predict_proba_many", refuse_many)
    monkeypatch.setattr(PAClassifier, "predict_proba_one", refuse_one)
    values = _stream(2 * BATCH_RECORDS)
    served = _serve(ServedPredictor, fake_clients, _trained(PAClassifier()), values, tmp_path)
    assert calls  # the batch call was made, and raised
    refused = sorted((k, dict(h)["detail"]) for k, _, h in served["dead_letters"]
                     if dict(h)["reason"] == b"model_error")
    bad = [f"k{i}".encode() for i, v in enumerate(values) if v and v.startswith(b'{"id": 5,')]
    assert bad and refused == sorted((k, b"ValueError: this event refused")
                                               for k in bad)
    assert len(served["predictions"]) + len(served["dead_letters"]) == len(values)


def test_model_errors_stop_a_predictor_only_in_a_row(fake_clients, tmp_path, monkeypatch):
    """A predictor counted every model_error of its life toward MODEL_FAILURES_TO_STOP (a
    served event never reset the count, as it does for the learner): a model refusing one
    event in two stopped it after 200. Only that many in a row stop it."""
    from river_pa.connectors.loop.records import MODEL_FAILURES_TO_STOP

    one = PAClassifier.predict_proba_one

    def refuse_odd(self, x):
        if x["a"] > 0:
            raise ValueError("this event refused")
        return one(self, x)

    monkeypatch.setattr(PAClassifier, "predict_proba_one", refuse_odd)
    n = 2 * MODEL_FAILURES_TO_STOP + 10
    values = [json.dumps({"id": f"e{i}", "x": {"a": (-1.0) ** i * (1 + i), "b": 1.0}}).encode()
              for i in range(n)]
    served = _serve(OneByOnePredictor, fake_clients, _trained(PAClassifier()), values, tmp_path)
    assert len(served["predictions"]) == n - n // 2 and len(served["dead_letters"]) == n // 2


class Snapshots:
    """A model topic's reader that hands out `count` snapshots without challengers' models."""

    def __init__(self, count: int):
        self.versions = iter(range(1, count + 1))

    def accept(self, manifest) -> None:
        pass


def test_shadow_without_the_learners_challengers_is_said_once(caplog):
    # a predictor with --shadow whose learner lacks it wrote records without a shadow field
    # and said nothing (helper-29)
    cfg = ServeConfig(model="PAClassifier", role="predict", events_topic="ev", shadow=True,
                      model_topic="ev.model", metrics_topic=None, report_path=None)
    predictor = Predictor(cfg, PAClassifier())
    predictor.model_reader = reader = Snapshots(2)
    predictor._newest_valid = lambda *args: ({"term": 1, "version": next(reader.versions)}, None,
                                             {"model": PAClassifier(), "learned": 0, "events": 0,
                                              "published_at_ms": 0})
    assert predictor._swap_model() and predictor._swap_model()
    assert predictor._shadow_models() == {}
    said = [r.getMessage() for r in caplog.records if "--shadow" in r.getMessage()]
    assert said == ["--shadow: the model snapshots of ev.model carry no challenger's model (give "
                    "the learner --shadow and a --challenger): the prediction records have no "
                    "shadow field"]
