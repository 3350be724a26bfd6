"""Sharded learning simulated in one process: `river-pa evaluate --shards N --mix-every K`.

Iterative parameter mixing (McDonald, Hall and Mann 2010, Distributed Training Strategies for
the Structured Perceptron, NAACL, Section 3, Figure 3) over a stream: the events are split
between N shards, each shard predicts its events with its own copy of the model and learns
them (progressive validation, labels `delay` events late as `evaluate`'s), and every K labelled
events in total (counted over all shards) the shards' models are mixed (`river_pa.mix`,
weighted by the events each learned since the last mix) and every shard continues from the
mixed model. The accuracy cost of sharding is measured here before any broker runs; the
daemon's sharded learners (`river-pa serve --role learn --shards N`, connectors/shards/) mix
through `river_pa.mix` too, in rounds of ceil(K/N) labels of each shard.

The split:

* "round-robin" (default): event i goes to shard i mod N;
* "key": to shard `river_pa._core.features.stable_hash(i)` mod N (a CRC-32 of the event's
  number i, 0-based, as the hashing trick hashes a non-string key). The data sets carry no event id, so the number stands for the key a producer
  would give a Kafka record; the hash spreads the events as a keyed topic's partitioner does.

`Sharded` wraps the model in a River estimator that routes each prediction and each label to
its event's shard, so River's `iter_progressive_val_score` runs it exactly as `evaluate` runs
one model: with N = 1 the figures and the final model are bit for bit `evaluate`'s.

"""

from __future__ import annotations

import dataclasses
import pickle

from river import base

from river_pa._core.features import stable_hash
from river_pa.evaluate.job import evaluate
from river_pa.evaluate.params import build_metrics
from river_pa.evaluate.results import Result
from river_pa.mixing import check_mixable, mix

__all__ = ["MAX_SHARDS", "SHARD_BY", "Sharded", "evaluate_shards"]

# each shard holds a copy of the model and every mix reads them all: far more shards than a
# deployment runs would fill the memory (10**9 copies were a MemoryError after 2.7 GB)
MAX_SHARDS = 1024

SHARD_BY = ("round-robin", "key")


def shard_of(i: int, n: int, shard_by: str) -> int:
    """The shard (0..n-1) of event number i.

    >>> [shard_of(i, 3, "round-robin") for i in range(5)]
    [0, 1, 2, 0, 1]
    >>> [shard_of(i, 3, "key") for i in range(5)]
    [1, 1, 0, 2, 2]

    """
    return i % n if shard_by == "round-robin" else stable_hash(i) % n


class Sharded(base.Estimator):
    """N copies of `model`, each learning its share of the events, mixed every `mix_every`
    labelled events (see the module docstring).

    Predictions and labels are routed by the event's number: the j-th call to a predict
    method is event j, and so is the j-th `learn_one` (labels come in the order of their
    events, as with a constant delay). `mixed()` is the mix of the shards as they stand.

    Parameters
    ----------
    model
        A learner `river_pa.mix` takes; it is copied, never changed.
    shards
        N >= 1.
    mix_every
        K >= 1, in labelled events over all shards.
    shard_by
        "round-robin" or "key".

    Raises ValueError for a model that cannot be mixed (`river_pa.mixing.check_mixable`'s
    message) or a bad N, K or split.

    """

    def __init__(self, model, shards: int = 1, mix_every: int = 1000,
                 shard_by: str = "round-robin"):
        check_mixable(model)
        for name, value, most in (("shards", shards, MAX_SHARDS), ("mix_every", mix_every, None)):
            if (not isinstance(value, int) or isinstance(value, bool) or value < 1
                    or (most is not None and value > most)):
                within = f"from 1 to {most}" if most else ">= 1"
                raise ValueError(f"--{name.replace('_', '-')} must be an integer {within}, "
                                 f"got {value!r:.40}")
        if shard_by not in SHARD_BY:
            raise ValueError(f"--shard-by must be one of {', '.join(SHARD_BY)}, got "
                             f"{shard_by!r}")
        self.model = model
        self.shards = shards
        self.mix_every = mix_every
        self.shard_by = shard_by
        self._copies = self._spread(model)
        self._since = [0] * shards  # events each shard learned since the last mix
        self._asked = self._told = 0  # events predicted, labels learned
        self.mixes = 0

    @property
    def _supervised(self):
        return self.model._supervised

    @property
    def _multiclass(self):
        return getattr(self.model, "_multiclass", False)

    def _spread(self, model) -> list:
        blob = pickle.dumps(model)
        return [pickle.loads(blob) for _ in range(self.shards)]

    def _next_shard(self):
        shard = self._copies[shard_of(self._asked, self.shards, self.shard_by)]
        self._asked += 1
        return shard

    def predict_one(self, x):
        return self._next_shard().predict_one(x)

    def learn_one(self, x, y) -> None:
        s = shard_of(self._told, self.shards, self.shard_by)
        self._copies[s].learn_one(x, y)
        self._told += 1
        self._since[s] += 1
        if self._told % self.mix_every == 0:
            self._copies = self._spread(self.mixed())
            self._since = [0] * self.shards
            self.mixes += 1

    def mixed(self):
        """The mix of the shards weighted by what each learned since the last mix (a copy of
        the first shard when none learned since: they are then all equal)."""
        if not any(self._since):
            return pickle.loads(pickle.dumps(self._copies[0]))
        return mix(self._copies, self._since)


class ShardedClassifier(Sharded, base.Classifier):
    """`Sharded` for a classifier (River's metrics take only classifiers)."""

    def predict_proba_one(self, x):
        return self._next_shard().predict_proba_one(x)


class ShardedRegressor(Sharded, base.Regressor):
    """`Sharded` for a regressor."""


def evaluate_shards(source, model, metrics: list[str], shards: int, mix_every: int,
                    shard_by: str = "round-robin", delay: int = 0, every: int = 1000,
                    on_row=None) -> tuple[Result, object]:
    """(`evaluate`'s Result, the final mixed model) of `model` learned in `shards` shards mixed
    every `mix_every` labelled events (see the module docstring); ValueError as `Sharded`.

    >>> from river_pa import PAClassifier
    >>> from river_pa.evaluate import datasets
    >>> result, final = evaluate_shards(datasets.load("phishing"), PAClassifier(C=0.1),
    ...                                 ["Accuracy"], shards=4, mix_every=100)
    >>> result.values, result.path  # one learner: 0.8752
    ({'Accuracy': 0.8288}, 'River iter_progressive_val_score: 4 round-robin shards mixed every 100 labelled events (12 mixes)')

    """
    build_metrics(metrics, model)  # refused naming the learner, not the shards' wrapper
    cls = ShardedClassifier if isinstance(model, base.Classifier) else ShardedRegressor
    sharded = cls(model, shards, mix_every, shard_by)
    result = evaluate(source, sharded, metrics, delay, every, on_row)
    mixes = f"{sharded.mixes} mix{'es' if sharded.mixes != 1 else ''}"
    path = (f"River iter_progressive_val_score: {shards} {shard_by} shards mixed every "
            f"{mix_every} labelled events ({mixes})")
    return dataclasses.replace(result, path=path), sharded.mixed()
