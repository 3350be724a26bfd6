"""Structured Passive-Aggressive learning of tag sequences (first-order Markov, Viterbi).

Source: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585. Section 9 (learning with structured output)
with the prediction-based cost-sensitive update of Section 8.

"""

from __future__ import annotations

import math
from itertools import accumulate, chain

import numpy as np
from river import base

from river_pa.mixing import MixSpec
from river_pa.structured import _numba
from river_pa._core.cache import DeepCopy
from river_pa._core.features import Vocabulary, to_values
from river_pa._core.validation import (
    MAX_CLASSES,
    check_class_room,
    check_count,
    check_label,
    check_positive,
    check_variant,
)

__all__ = ["PASequenceTagger"]


def _values(xs: list) -> np.ndarray:
    """Every token's feature values, concatenated and validated (errors name the token)."""
    vals = list(chain.from_iterable(x.values() for x in xs))
    try:
        if math.isfinite(sum(vals)):
            return np.array(vals, dtype=np.float64)
    except (TypeError, OverflowError):
        pass
    for i, x in enumerate(xs):
        try:
            to_values(x)
        except (TypeError, ValueError) as err:
            raise type(err)(f"token {i}: {err}") from None
    raise ValueError("feature values sum to a non-finite number")


class PASequenceTagger(DeepCopy, base.Estimator):
    """Passive-Aggressive sequence tagger over first-order Markov features, Viterbi decoding.

    A sentence is a list of per-token feature dicts ``xs`` and a list of tags ``ys`` (any
    hashable values). The score of a tag sequence y is

        w . Phi(x, y) = T[start, y_1] + sum_i (E . x_i)[y_i] + sum_{i >= 2} T[y_{i-1}, y_i],

    with emission weights E (every token feature crossed with every tag), transitions T and
    initial-tag weights. `predict_one` returns the argmax over all k^m tag sequences by Viterbi
    in O(m k^2). `learn_one` decodes z with the current weights and, when z != y, makes the
    prediction-based PA step of Crammer et al. (2006), Sections 8-9, with the Hamming cost
    rho(y, z) (the number of wrong tags):

        l = w . Phi(x, z) - w . Phi(x, y) + sqrt(rho),   w <- w + tau (Phi(x, y) - Phi(x, z)),

    tau = l / ||Phi(x, y) - Phi(x, z)||^2 (PA), min(C, that) (PA-I, the paper's choice) or
    l / (||Phi(x, y) - Phi(x, z)||^2 + 1/(2C)) (PA-II). After a PA step,
    w . Phi(x, y) - w . Phi(x, z) = sqrt(rho) exactly.

    With `average`, `predict_one` and `score_one` use the average of the weights after every
    sentence learned (as the averaged perceptron does); learning always uses the current
    weights. The average is kept lazily: a second array U accumulates n tau (Phi(x, y) -
    Phi(x, z)) at the n-th update, the average is w - U / n, and the averaged scores are
    computed as (E - U / n) . x per token without forming the average, so a step still costs
    O(changed tokens x features). Averaging doubles memory and the cost of `predict_one`; on
    CoNLL-2000 chunking (5 passes, PA-I, C = 1) it raises the test chunk F1 from 91.90 to
    93.71 (examples/conll2000_chunking.py): the last weights over-react to the last sentences.

    Tags and features appear online; a feature never seen in training is ignored at
    prediction. There is no end-of-sequence transition (as in the paper's decomposition).

    This is not one of River's estimator types (River has no sequence models): it is a
    `river.base.Estimator` with River's parameter, clone and pickling conventions.

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0); unused by PA.
    average
        Whether predictions use the averaged weights.
    max_classes
        The most tags the tagger will hold (default 1,000): a sentence with a tag past it
        raises `river_pa._core.validation.TooManyClassesError` (a ValueError) and changes
        nothing. Memory and a Viterbi step grow with the square of the tags (the transition
        matrix), so a stream of fresh tags would otherwise exhaust both.

    Notes
    -----
    Errors: ``xs`` must be a non-empty list of dicts with real values and ``ys`` a list of
    hashable tags of the same length; otherwise a ValueError or TypeError names the token or the
    lengths, and the model is unchanged.

    Examples
    --------

    >>> from river_pa import PASequenceTagger
    >>> def tokens(words):
    ...     return [{"w=" + w: 1.0, "bias": 1.0} for w in words]
    >>> model = PASequenceTagger(variant="PA-I", C=1.0, average=False)
    >>> for _ in range(3):
    ...     model.learn_one(tokens(["the", "cat", "sat"]), ["DT", "NN", "VB"])
    ...     model.learn_one(tokens(["a", "dog", "ran"]), ["DT", "NN", "VB"])
    >>> model.predict_one(tokens(["the", "dog", "sat"]))
    ['DT', 'NN', 'VB']

    A hard PA step puts the gold sequence sqrt(rho) above the sequence it replaced: here
    ["X", "X"] (all scores are 0 at first and ties go to the first tag), one wrong tag:

    >>> model = PASequenceTagger(variant="PA", average=False)
    >>> model.learn_one(tokens(["a", "b"]), ["X", "Y"])
    >>> model.score_one(tokens(["a", "b"]), ["X", "Y"]) - model.score_one(
    ...     tokens(["a", "b"]), ["X", "X"])
    1.0

    """

    # the averaged weights are E - UE / n: E, UE and n mix alike (see `river_pa.mixing`)
    _MIX = MixSpec({"_E": ("feature", "label"), "_UE": ("feature", "label"),
                    "_T": ("start+label", "label"), "_UT": ("start+label", "label")},
                   counts=("_n",), labels="_tag_list", add_label="_add_tag")

    def __init__(self, variant: str = "PA-I", C: float = 1.0, average: bool = True,
                 max_classes: int = MAX_CLASSES):
        self.variant = variant
        self.C = C
        self.average = average
        self.max_classes = max_classes
        self._variant = check_variant(variant)
        check_positive("C", C)
        check_count("max_classes", max_classes)
        self._index = Vocabulary()
        self._tag_list: list = []
        self._tag_index: dict = {}
        self._n = 0
        self._E = np.zeros((64, 0))
        self._T = np.zeros((1, 0))
        self._UE = np.zeros((64, 0))
        self._UT = np.zeros((1, 0))

    @classmethod
    def _unit_test_params(cls):
        yield {"variant": "PA-I", "C": 1.0, "average": True}
        yield {"variant": "PA", "average": False}
        yield {"variant": "PA-II", "C": 0.1}

    @property
    def tags(self) -> list:
        """The tags seen so far, in order of appearance."""
        return list(self._tag_list)

    # -- input -----------------------------------------------------------------------------

    @staticmethod
    def _parse(xs) -> tuple[np.ndarray, list, np.ndarray]:
        """(indptr, feature keys, values) of a sentence, validated."""
        if not isinstance(xs, list | tuple) or not xs:
            raise ValueError(
                f"xs must be a non-empty list of token feature dicts, got {xs!r:.80}"
            )
        for i, x in enumerate(xs):
            if not isinstance(x, dict):
                raise TypeError(f"token {i} must be a dict of features, got {type(x).__name__}")
        keys = list(chain.from_iterable(xs))
        indptr = np.fromiter(accumulate(map(len, xs), initial=0), np.int64, len(xs) + 1)
        return indptr, keys, _values(xs)

    def _new_tags(self, ys, m: int, learn: bool) -> list:
        """The tags of `ys` never seen, in order of appearance, after every check (without
        `learn` an unseen tag is an error); nothing changes here."""
        if not isinstance(ys, list | tuple) or len(ys) != m:
            n = len(ys) if isinstance(ys, list | tuple) else type(ys).__name__
            raise ValueError(f"ys must be a list of one tag per token: xs has {m} tokens, ys {n}")
        for i, tag in enumerate(ys):
            try:
                check_label(tag)
            except TypeError:
                raise TypeError(f"tag {i} ({tag!r}) is not hashable") from None
            except ValueError as err:
                raise ValueError(f"tag {i} {str(err).removeprefix('a label ')}") from None
            if not learn and tag not in self._tag_index:
                raise ValueError(f"tag {i} ({tag!r}) was never seen in training")
        new = [tag for tag in dict.fromkeys(ys) if tag not in self._tag_index]
        check_class_room(self, len(self._tag_list), new)
        return new

    def _encode(self, ys) -> np.ndarray:
        """Tag indices of `ys` (every tag known)."""
        return np.fromiter(map(self._tag_index.__getitem__, ys), np.int64, len(ys))

    # -- state -----------------------------------------------------------------------------

    def _add_tag(self, tag) -> None:
        k = len(self._tag_list)
        self._tag_index[tag] = k
        self._tag_list.append(tag)
        for name in ("_E", "_UE"):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], k + 1))
            new[:, :k] = old
            setattr(self, name, new)
        for name in ("_T", "_UT"):
            new = np.zeros((k + 2, k + 1))
            new[: k + 1, :k] = getattr(self, name)
            setattr(self, name, new)

    def _grow(self, size: int) -> None:
        """Room for `size` feature positions (rows of the emission weights)."""
        rows = self._E.shape[0]
        if size > rows:
            new_rows = max(size, 2 * rows)
            for name in ("_E", "_UE"):
                new = np.zeros((new_rows, self._E.shape[1]))
                new[:rows] = getattr(self, name)
                setattr(self, name, new)

    def _scores(self, xs) -> tuple[np.ndarray, np.ndarray]:
        """Emission scores S (m, k) and transitions T (k + 1, k) of the prediction weights."""
        indptr, keys, val = self._parse(xs)
        idx = self._index.lookup(keys)
        if self.average and self._n > 0:
            inv = 1.0 / self._n
            S = _numba.emission_scores(self._E, self._UE, inv, indptr, idx, val)
            return S, self._T - self._UT * inv
        return _numba.emission_scores(self._E, self._E, 0.0, indptr, idx, val), self._T

    # -- learning and prediction -------------------------------------------------------------

    def learn_one(self, xs: list[dict], ys: list) -> None:
        """One prediction-based PA step on the sentence `xs` with gold tags `ys`."""
        indptr, keys, val = self._parse(xs)
        new = self._new_tags(ys, len(xs), learn=True)
        idx = self._index.insert(keys)  # TooManyFeaturesError: nothing has changed yet
        for tag in new:
            self._add_tag(tag)
        y = self._encode(ys)
        self._grow(self._index.size)
        _numba.learn(
            self._variant, float(self.C), self._E, self._T, self._UE, self._UT, self.average,
            self._n, indptr, idx, val, y,
        )
        self._n += 1

    def predict_one(self, xs: list[dict]) -> list:
        """The highest-scoring tag sequence (Viterbi); [None] * len(xs) before any tag is seen."""
        if not self._tag_list:
            self._parse(xs)
            return [None] * len(xs)
        path, _ = _numba.viterbi(*self._scores(xs))
        return [self._tag_list[t] for t in path.tolist()]

    def score_one(self, xs: list[dict], ys: list) -> float:
        """w . Phi(x, y) under the prediction weights; every tag of `ys` must be known."""
        y = None
        if isinstance(xs, list | tuple):
            self._new_tags(ys, len(xs), learn=False)
            y = self._encode(ys)
        S, T = self._scores(xs)
        return float(_numba.sequence_score(S, T, y))
