"""Multilabel ranking Passive-Aggressive learner.

Source: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585, Section 7 (multiclass multilabel
categorization, the single most-violated pair of a relevant and an irrelevant label).

"""

from __future__ import annotations

import numbers

import numpy as np
from river import base
from river.utils.math import sigmoid

from river_pa._core.batch import frame_arrays, row_index
from river_pa._core.features import canonical_order, stable_hash
from river_pa.mixing import MixSpec
from river_pa.multiclass import _numba as multiclass_numba
from river_pa._core.validation import check_positive, check_sample_weight
from river_pa.multiclass.base import MAX_CLASSES, MultiPrototype, label_weights

__all__ = ["PAMultiLabelClassifier"]


def _relevance(label, value) -> bool:
    if isinstance(value, bool | np.bool_) or isinstance(value, numbers.Real) and value in (0, 1):
        return bool(value)
    raise ValueError(f"label {label!r} must be True or False (or 0/1), got {value!r}")


CHAINS = 3  # the default ensemble of classifier chains (rule "chain"): label orders
C_VALUES = (0.01, 0.03, 0.1)  # the default C: each order learned with each
MAX_CHAINS = 64
_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def _chain_count(chains, rule: str) -> int:
    """The number of chains `chains` gives under `rule` (None: `CHAINS` on the chain, else 1);
    ValueError for anything but an int in [1, MAX_CHAINS], or more than one without the chain."""
    if chains is None:
        return CHAINS if rule == "chain" else 1
    if isinstance(chains, bool) or not isinstance(chains, numbers.Integral) or not (
            1 <= chains <= MAX_CHAINS):
        raise ValueError(f"chains must be an int from 1 to {MAX_CHAINS}, got {chains!r}")
    if chains > 1 and rule != "chain":
        raise ValueError(f"chains={chains} needs rule='chain' (rule {rule!r} has no label "
                         "order to vary)")
    return int(chains)


def _c_values(C, variant: str) -> tuple:
    """The C of each copy of the chains: `C` (a number) once, or each of a tuple (or list) of
    1 to 16 numbers; every value > 0; one under "PA", which has no C (its copies would be the
    same). ValueError otherwise."""
    values = tuple(C) if isinstance(C, tuple | list) else (C,)
    try:
        if 1 <= len(values) <= 16:
            for value in values:
                check_positive("C", value)
            return values[:1] if variant == "PA" else values
    except ValueError:
        pass
    raise ValueError(f"C must be a number > 0 or a tuple of 1 to 16 of them, got {C!r}")


def _mix64(z: int) -> int:
    """SplitMix64's output function (Steele, Lea and Flood 2014): a fixed pseudo-random
    number from z, the same in every process."""
    z = (z + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def chain_keys(label, k: int) -> np.ndarray:
    """The sort keys of `label` in k chains (uint64, k): chain j orders the labels by
    SplitMix64(stable_hash(label) + j 2^32), so every copy of a model that holds the label
    gives it the same place in each chain, whatever order the labels came in (`mix` averages
    chain j with chain j), and a new label takes its place without moving the others.

    >>> keys = {label: chain_keys(label, 3) for label in ("beach", "ski", "sun")}
    >>> [sorted(keys, key=lambda label: keys[label][j]) for j in range(3)]
    [['beach', 'ski', 'sun'], ['ski', 'sun', 'beach'], ['beach', 'sun', 'ski']]

    """
    h = stable_hash(label)
    return np.array([_mix64(h + (j << 32)) for j in range(k)], dtype=np.uint64)


RULES = {"threshold": multiclass_numba.THRESHOLD, "ranking": multiclass_numba.RANKING,
         "chain": multiclass_numba.CHAIN}


class PAMultiLabelClassifier(MultiPrototype, base.MultiLabelClassifier):
    """Multilabel Passive-Aggressive classifier (PA, PA-I, PA-II) that learns where to cut.

    Each label has a prototype w_r and intercept b_r, scoring s_r = w_r . x + b_r; the
    predicted set is {r : s_r > 0}. Three update rules:

    - "threshold": every label must sit on its side of the cut, s_r >= 1 if relevant and
      s_r <= -1 if not. The event's loss is the sum of the n hinge losses
      l_r = max(0, 1 - z_r s_r) (z_r = +-1), and one PA step on that loss moves every violated
      label, w_r += z_r tau x, with tau the PA / PA-I / PA-II step of loss L over
      k (||x||^2 + c^2) for k violated labels (Crammer et al. 2006, Section 7, with this loss;
      c = `intercept_scale` is the value of the constant feature that carries the intercepts).
      Each label's intercept is its own cut, learned online by the same step.
    - "chain" (default): the threshold rule on a classifier chain (Read, Pfahringer, Holmes
      and Frank 2011, Classifier chains for multi-label classification, Machine Learning 85):
      label r also reads the relevance (1 or 0) of every label before it in its chain,
      through weights v_rq. Learning reads the true relevance, so l_r uses
      s_r + sum_{q<r} v_rq y_q and label r's squared norm is ||x||^2 + c^2 + #{q < r relevant};
      prediction reads the labels predicted before r. By default chains in `chains` = 3
      label orders (each chain its own W, b and V) learn side by side and a label's score is
      the mean of its scores in the chains: the ensemble of classifier chains of Read et al.
      (2011, Section 5), here without bagging, each chain's order fixed by the labels
      themselves (`chain_keys`: the same in every copy, so copies mix), each order learned
      once per value of `C` (below). One chain's result depends on its order; the mean over
      orders does less.
    - "ranking": the paper's rule (Section 7), which ranks relevant labels above irrelevant
      ones by a margin of 1 and enforces only the single most violated constraint
      s_r - s_q >= 1: with lo the lowest-scoring relevant label and hi the highest-scoring
      irrelevant one, the pair among (lo, hi), (lo, threshold), (threshold, hi) of largest
      s_q - s_r. The threshold is a label of fixed score 0 in the ranking (without it this is
      exactly the paper's most-violated pair); a pair of labels moves both prototypes with
      ||Phi(x, r) - Phi(x, q)||^2 = 2 (||x||^2 + c^2), a pair with the threshold one.

    With `average` (default) predictions use the mean of the weights after each learned event
    (the averaged perceptron of Freund and Schapire 1999; the online-to-batch conversion of
    Cesa-Bianchi, Conconi and Gentile 2004), kept in O(nnz) per step as
    ((t + 1) W - U) / t with U = sum_t t * step_t: PA-I's last iterate chases label noise.
    But on a stream whose labels drift (a file sorted by label, as MULAN's scene) the mean
    over the whole past lags: so the learner counts, on every labelled event before it learns,
    the labels the averaged and the last weights each predict wrong, and predicts with the
    last weights while they have made fewer mistakes (follow the leader between two
    predictors, Cesa-Bianchi and Lugosi 2006, Prediction, Learning, and Games, Section 4.3; a
    tie keeps the averaged ones). The counts are `_miss_averaged` and `_miss_last` (per
    chain: the chains of one C hold the counts of their mean).

    By default each label order is learned with each of C = 0.01, 0.03 and 0.1 (9 chains)
    and a label's score is the mean over all of them: PA-I with a small C learns slowly and
    averages noise out, with a larger one it learns fast, and the mean of the three did
    better than any one C. Each C's chains follow their own leader between averaged and last
    weights (the last weights of a large C chase noise that a small C's do not; one switch
    for all nine gave up about half the gain): the default is exactly the mean of the scores
    of `PAMultiLabelClassifier(C=c)` for the three c (to rounding: the same weights bit for
    bit). Memory: three times the weights of one C.

    Measured (issue 19; `benchmarks/bench_multilabel.py` prints the full table): River's
    `StandardScaler` in front, progressive, file order and 10 seeded shuffles. Hamming loss
    over River's `ClassifierChain(LogisticRegression())`'s (in how many of the 11 orders it is
    below; the former default, C = 0.03 alone, in brackets): emotions (593 x 72, 6 labels)
    0.928, 11 (0.945, 11; example-F1 0.5975 vs the chain's 0.602), River's Yeast (first
    1,000 events, 14 labels) 0.956, 11 (0.973, 10; F1 0.582 vs 0.578); on
    `make_multilabel_classification` streams (1,500 events, count features) of the benchmark
    (20 features, 6 labels, seeds 1-4 with 2, 1, 4 and 3 labels per event on average) 0.992,
    7; 0.982, 10; 0.998, 6; 1.010, 1 (former 1.005, 4; 0.998, 6; 1.008, 3; 1.022, 0), and on
    six it was not chosen on (seed: features, labels per event, labels: 5: 20, 2, 6; 6: 30,
    3, 5; 7: 50, 1, 8; 8: 40, 5, 7; 9: 25, 4, 8; 10: 35, 2, 6) 0.990, 9; 0.987, 8; 0.979, 9
    (F1 0.713 vs 0.718); 0.977, 11; 0.990, 10; 1.008, 2 (former 0.987-1.026). Better than the
    former default on all twelve, below the chain on average on ten, in 8 of 11 orders on
    eight: the logistic chain stays ahead on two of the count-feature streams. On MULAN sets
    (the former default; 11 orders each): scene 0.872 (the averaged weights alone: 0.989, and
    0.235 against the chain's 0.079 in the file's order, sorted by label), birds 0.927, flags
    0.988, plant 0.766 (F1 0.198 vs 0.261: it predicts fewer of the rare labels), the whole
    yeast 0.960. Cost: 1.6x the former default's time per `predict_one` + `learn_one` on
    Yeast (77 vs 48 us), 1.35x on emotions (42 vs 31 us).

    `predict_proba_one` gives P(r relevant) = 1 / (1 + exp(-s_r)) of the score the label is
    predicted by (a fixed link, not calibrated), as {label: {False: 1 - p, True: p}}.
    `weights` and `intercepts` are the learning (last) weights, not their average, and the mean
    over the chains; the chains' label-on-label weights are not in them.

    Batches: `learn_many` and `predict_many` take a pandas DataFrame, a
    2-D numpy array or a scipy.sparse matrix (`columns=` names an array's features once; by
    default they are the column numbers; a sparse row holds its stored entries); anything else
    is a TypeError. Targets and weights pair with the rows by position, not by pandas index
    (as in River). `learn_many` equals a `learn_one` loop over the rows.

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0; unused by PA), or a tuple of 1 to 16 values: the chains are then
        learned once with each (by default 0.01, 0.03 and 0.1, so 3 orders x 3 values = 9
        chains) and their scores averaged: PA-I with a small C learns slowly but averages out
        noise, with a larger C it learns fast; the mean of both gained 1-2% of Hamming loss
        over C = 0.03 alone on every set measured (see above). Under "PA" only the first value
        counts (its copies would be the same). A sample weight scales every value.
    learn_intercept
        Whether each label learns an intercept.
    n_features
        None for a vocabulary of feature keys, a power of two for the hashing trick, at most 2**26
        (`river_pa._core.features.MAX_FEATURES`; more raises ValueError).
    rule
        "chain", "threshold" or "ranking" (see above); anything else raises ValueError.
    average
        Whether predictions use the averaged weights (memory: a second weight matrix).
    intercept_scale
        The value c (> 0) of the constant feature that carries the intercepts: an intercept
        moves c^2 times as fast as the weight of a feature of value 1, so label base rates are
        learned faster with standardised features, whose ||x||^2 is about the feature count.
    max_classes
        The most labels the learner will hold (default 1,000): a label past it raises
        `river_pa._core.validation.TooManyClassesError` (a ValueError) and changes nothing.
        Memory grows with the labels (a weight row each, and the chain's labels x labels), so
        whoever writes the labels bounds it through this.
    categorical
        Whether a string value is a one-hot feature, as in `river_pa.PAClassifier`.
    chains
        How many label orders the classifier chains learn in side by side (rule "chain"), an
        int from 1 to 64; None (default) is 3 on the chain and 1 otherwise; more than one under
        another rule is a ValueError. Each order is learned once per value of `C` (at most 64
        chains in all). Each chain costs a copy of the weights (and of their averages) and its
        share of the compiled work: on River's Yeast (103 features, 14 labels), with one C,
        3 chains took 1.24x one chain's time per `predict_one` + `learn_one` pair (45 vs
        38 us; Python's per-event work is shared) and 2.5x on `predict_many` + `learn_many`
        batches of 500 (22 vs 9 us per event); the default's 9 chains 1.6x the 3 (77 vs
        48 us, on another day's machine).

    Notes
    -----
    `y` is a dict {label: bool} (0/1 accepted); labels are any hashable values, and a label
    first seen gets a fresh prototype (its place in each chain by `chain_keys`); a label
    missing from an event's `y` counts as irrelevant for that event. Sample weights scale C.
    A bad feature value raises TypeError / ValueError naming the feature, a bad `y`
    TypeError / ValueError naming the label; the model is unchanged after a rejected event.

    Examples
    --------

    >>> import river_pa
    >>> model = river_pa.PAMultiLabelClassifier(variant="PA", learn_intercept=False,
    ...                                          rule="threshold", average=False)
    >>> model.learn_one({"sun": 1.0}, {"beach": True, "ski": False})
    >>> model.predict_one({"sun": 1.0}), model.predict_one({"snow": 1.0})
    ({'beach': True, 'ski': False}, {'beach': False, 'ski': False})

    Both labels violated their side by 1 (loss 2 over 2 ||x||^2): one hard step put each
    exactly on its margin:

    >>> model.decision_function_one({"sun": 1.0})
    {'beach': 1.0, 'ski': -1.0}

    On the chain, ski also reads beach's relevance (1 here): its squared norm is 2, the step
    2 / (1 + 2), and at prediction ski reads the beach it predicts:

    >>> model = river_pa.PAMultiLabelClassifier(variant="PA", learn_intercept=False,
    ...                                          average=False, chains=1)
    >>> model.learn_one({"sun": 1.0}, {"beach": True, "ski": False})
    >>> {k: round(v, 4) for k, v in model.decision_function_one({"sun": 1.0}).items()}
    {'beach': 0.6667, 'ski': -1.3333}

    With the default 3 chains, the second puts ski first (`chain_keys`): there beach reads
    ski's 0, both norms are 1 and the step is 2 / 2, so beach scores (2/3 + 1 + 2/3) / 3:

    >>> model = river_pa.PAMultiLabelClassifier(variant="PA", learn_intercept=False,
    ...                                          average=False)
    >>> model.learn_one({"sun": 1.0}, {"beach": True, "ski": False})
    >>> {k: round(v, 4) for k, v in model.decision_function_one({"sun": 1.0}).items()}
    {'beach': 0.7778, 'ski': -1.2222}

    With the ranking rule the same event moves the pair (beach, ski) half each way:

    >>> model = river_pa.PAMultiLabelClassifier(variant="PA", learn_intercept=False,
    ...                                          rule="ranking")
    >>> model.learn_one({"sun": 1.0}, {"beach": True, "ski": False})
    >>> model.decision_function_one({"sun": 1.0})
    {'beach': 0.5, 'ski': -0.5}

    """

    # the averaged weights are ((t + 1) W - U) / t: W, U and t mix alike (`river_pa.mixing`)
    _MIX = MixSpec({"_W": ("chain", "label", "feature"), "_b": ("chain", "label"),
                    "_V": ("chain", "label", "label"), "_U": ("chain", "label", "feature"),
                    "_ub": ("chain", "label"), "_UV": ("chain", "label", "label"),
                    "_miss_averaged": ("chain",), "_miss_last": ("chain",)}, counts=("_t",),
                   labels="_classes", add_label="_add_label")

    def __init__(
        self,
        variant: str = "PA-I",
        C: float | tuple = C_VALUES,
        learn_intercept: bool = True,
        n_features: int | None = None,
        rule: str = "chain",
        average: bool = True,
        intercept_scale: float = 1.5,
        max_classes: int = MAX_CLASSES,
        categorical: bool = False,
        chains: int | None = None,
    ):
        if rule not in RULES:
            raise ValueError(f"rule must be one of {sorted(RULES)}, got {rule!r}")
        check_positive("intercept_scale", intercept_scale)
        self.chains = chains
        self._n_orders = _chain_count(chains, rule)
        c_values = _c_values(C, variant)
        self._n_chains = self._n_orders * len(c_values)
        if self._n_chains > MAX_CHAINS:
            raise ValueError(f"at most {MAX_CHAINS} chains: {self._n_orders} label orders x "
                             f"{len(c_values)} values of C make {self._n_chains}")
        # chain j: label order j mod the orders, C the (j div the orders)-th value
        self._cs = np.repeat(np.array(c_values, dtype=np.float64), self._n_orders)
        self.rule = rule
        self._rule = RULES[rule]
        self.average = bool(average)
        self.intercept_scale = intercept_scale
        super().__init__(variant, c_values[0], learn_intercept, n_features,
                         max_classes=max_classes, categorical=categorical)
        self.C = tuple(C) if isinstance(C, list) else C  # a list (JSON's) is the tuple
        # the intercept is the weight of a constant feature of value intercept_scale: its
        # square counts in ||x||^2 and b (= the weight times that value) moves by tau times it
        self._intercept_norm = intercept_scale**2 if learn_intercept else 0.0
        k, labels = self._n_chains, self._INITIAL_LABELS
        self._W = np.zeros((k, labels, self._W.shape[1]))  # the base class's, one per chain
        self._b = np.zeros((k, labels))
        self._V = np.zeros((k, labels, labels))
        # np.zeros, not zeros_like: the pages stay unwritten until used (zeros_like wrote
        # all of them: 19 GB for the default's 9 chains hashed to 2**26 positions)
        self._U = np.zeros(self._W.shape)
        self._ub = np.zeros(self._b.shape)
        self._UV = np.zeros(self._V.shape)
        self._chain_keys = np.zeros((k, labels), dtype=np.uint64)  # chain_keys of each label row
        self._orders = np.zeros((k, 0), dtype=np.int64)  # each chain's label rows, in order
        self._t = 0  # events learned, counted only when averaging
        # the labels the averaged and the last weights predicted wrong on the labelled events
        # (per chain: each C's chains hold their mean's counts)
        self._miss_averaged, self._miss_last = np.zeros(k), np.zeros(k)

    def __setstate__(self, state):
        # a pickle from before C varied between chains: one C, each chain its own order
        if "_cs" not in state:
            k = state["_n_orders"] = state["_n_chains"]
            state["_cs"] = np.full(k, float(state["C"]))
            for name in ("_miss_averaged", "_miss_last"):
                state[name] = np.full(k, float(state[name]))
        super().__setstate__(state)

    @classmethod
    def _unit_test_params(cls):
        yield from super()._unit_test_params()
        yield {"rule": "ranking", "C": 1.0}
        yield {"rule": "threshold", "average": False}
        yield {"chains": 1}

    def _grow_labels(self, capacity: int) -> None:
        grown = {}
        for name in ("_W", "_U", "_V", "_UV", "_b", "_ub", "_chain_keys"):
            old = getattr(self, name)
            shape = (old.shape[0], capacity, *((capacity,) if name in ("_V", "_UV") else
                                               old.shape[2:]))
            grown[name] = np.zeros(shape, dtype=old.dtype)
            grown[name][tuple(slice(n) for n in old.shape)] = old
        self.__dict__.update(grown)  # all or nothing: a MemoryError above changes nothing

    def _grow(self, size: int):
        cols = self._W.shape[2]
        if size > cols:
            grown = {}
            for name in ("_W", "_U"):
                grown[name] = np.zeros((*self._W.shape[:2], max(size, 2 * cols)))
                grown[name][:, :, :cols] = getattr(self, name)
            self.__dict__.update(grown)

    def _add_label(self, label) -> int:
        n = self._n
        row = super()._add_label(label)
        if row == n:  # a new label: its place in every chain (the same for each C)
            self._chain_keys[:, row] = np.tile(chain_keys(label, self._n_orders),
                                               self._n_chains // self._n_orders)
        return row

    @property
    def _chain_orders(self) -> np.ndarray:
        """Each chain's label rows in chain order (int64, chains x labels), sorted by their
        `chain_keys` once per change of the label set."""
        if self._orders.shape[1] != self._n:
            keys = self._chain_keys[:, : self._n]
            orders = np.argsort(keys, axis=1, kind="stable")
            if (np.diff(np.take_along_axis(keys, orders, axis=1), axis=1) == 0).any():
                # labels whose stable hashes collide (CRC-32: about 1e-4 among 1,000 labels,
                # helper-38) are put in the order of their canonical form, not of arrival
                canonical = [canonical_order(label) for label in self._classes]
                orders = np.array([sorted(range(self._n), key=lambda r: (int(row[r]),
                                                                        canonical[r]))
                                   for row in keys], dtype=np.int64)
            self._orders = orders
        return self._orders

    def _score_event(self, pos, val):
        """(||x||^2, scores): [0, j] chain j's learning weights' W x + b, [1, j] U x + ub."""
        s = np.zeros((2, self._n_chains, self._n))
        sq = multiclass_numba.chain_scores(self._W, self._b, self._n, pos, val, s[0])
        if self._t:
            multiclass_numba.chain_scores(self._U, self._ub, self._n, pos, val, s[1])
        return sq, s

    def _predicted(self, S, SU=None) -> np.ndarray:
        """The scores labels are predicted by (> 0: relevant), from each chain's base scores
        (S[0], S[1] of one event, or S and SU of a batch: chains x rows x labels)."""
        # each C's chains switch between averaged and last weights on their own (the last
        # weights of a large C chase noise that a small C's do not)
        chain = self._rule == multiclass_numba.CHAIN
        switch = (self._t, self._miss_last, self._miss_averaged)
        if SU is None:
            out = np.empty(self._n)
            multiclass_numba.multilabel_predict(S[0], S[1], self._V, self._UV, *switch, self._n,
                                                chain, self._chain_orders, out)
            return out
        return multiclass_numba.multilabel_predict_dense(S, SU, self._V, self._UV, *switch,
                                                         self._n, chain, self._chain_orders)

    def _check_targets(self, y) -> list:
        """The labels of `y` in order, every value checked."""
        if not isinstance(y, dict):
            raise TypeError(f"y must be a dict {{label: bool}}, got {type(y).__name__}")
        for label, value in y.items():
            _relevance(label, value)
        return list(y)

    def learn_one(self, x: dict, y: dict, w: float = 1.0) -> None:
        w = check_sample_weight(w)
        labels = self._check_targets(y)
        self._event(x)  # validates x before the labels change the model
        self._check_new_labels(labels)
        if w:  # and that its new keys fit (TooManyFeaturesError left new labels in place)
            self._index.check_room(self._n_unseen)
        for label in labels:
            self._add_label(label)
        if w == 0.0:
            return
        self._event(x, learn=True)
        pos, val, sq, s = self._epos, self._val, self._sq, self._scores
        rel = np.zeros(self._n, dtype=np.int64)
        for label, value in y.items():
            rel[self._labels[label]] = bool(value)
        if self._t:
            self._count_mistakes(s, rel)
        self._t += self.average
        multiclass_numba.multilabel_update(
            self._rule, self._variant, self._cs, w, self._W, self._b, self._V, self._U, self._ub,
            self._UV, self._t, self._intercept_norm, pos, val, sq, s[0], self._n, rel,
            self._chain_orders
        )
        self._version += 1  # the averaged weights move with every event

    def learn_many(self, X, Y: pd.DataFrame, w=None, *, columns=None) -> None:
        """Learn from the rows of X in order, exactly as a `learn_one` loop does.

        X: a DataFrame, a 2-D numpy array or a scipy.sparse matrix (`columns`: the feature keys
        of an array's columns, default their numbers). `Y` has one bool (or 0/1) column per
        label; Y and w pair with the rows of X by position.

        """
        import pandas as pd

        if not isinstance(Y, pd.DataFrame):
            raise TypeError(f"Y must be a DataFrame with one column per label, got "
                            f"{type(Y).__name__}")
        if not Y.columns.is_unique:
            label = Y.columns[Y.columns.duplicated()][0]
            raise ValueError(f"label {label!r} names more than one column of Y")
        self._check_new_labels(list(Y.columns))  # before _batch inserts the feature keys
        for label in Y.columns:
            for value in pd.unique(Y[label]):
                _relevance(label, value)
        pos, values, sw = self._batch(X, len(Y), w, columns)
        for label in Y.columns:
            self._add_label(label)
        R = np.zeros((len(Y), self._n), dtype=np.int64)
        rows = [self._labels[label] for label in Y.columns]
        R[:, rows] = Y.to_numpy(dtype=bool)
        self._t = multiclass_numba.multilabel_dense(
            self._rule, self._variant, self._cs, self._W, self._b, self._V, self._U, self._ub,
            self._UV, self._t, self.average, self._intercept_norm, pos, values, R, self._n, sw,
            self._chain_orders, self._n_orders, self._miss_averaged, self._miss_last
        )
        self._version += 1

    def _count_mistakes(self, s, rel) -> None:
        """Count the labels of a labelled event the averaged and the last weights predict
        wrong (s: the event's scores before the step), per C's chains."""
        multiclass_numba.multilabel_mistakes(
            s[0], s[1], self._V, self._UV, self._t, self._n,
            self._rule == multiclass_numba.CHAIN, self._chain_orders, rel, self._n_orders,
            self._miss_averaged, self._miss_last)

    @property
    def weights(self) -> dict:
        """The non-zero learning (last) weights, the mean over the chains: {label: {feature key
        (position when hashing): weight}}."""
        return label_weights(self._W.mean(axis=0), self._labels, self._index)

    @property
    def intercepts(self) -> dict:
        """{label: learning (last) intercept, the mean over the chains}."""
        b = self._b.mean(axis=0)
        return {label: float(b[row]) for label, row in self._labels.items()}

    def decision_function_one(self, x: dict) -> dict:
        """{label: score} for every label seen (> 0 means predicted)."""
        return dict(zip(self._classes, self._predicted(self._scores_one(x)).tolist()))

    def predict_proba_one(self, x: dict) -> dict:
        out = {}
        for label, margin in self.decision_function_one(x).items():
            p = sigmoid(margin)
            out[label] = {False: 1.0 - p, True: p}
        return out

    def predict_one(self, x: dict) -> dict:
        return {label: m > 0.0 for label, m in self.decision_function_one(x).items()}

    def predict_many(self, X, *, columns=None) -> pd.DataFrame:
        """One bool column per label seen, on X's index (0..n-1 for an array)."""
        pos, values = frame_arrays(X, self._index, learn=False, columns=columns)
        S = np.stack([multiclass_numba.scores_dense(W, b, self._n, pos, values)
                      for W, b in zip(self._W, self._b)])
        SU = np.stack([multiclass_numba.scores_dense(U, ub, self._n, pos, values)
                       for U, ub in zip(self._U, self._ub)])
        import pandas as pd

        return pd.DataFrame(self._predicted(S, SU) > 0.0, index=row_index(X),
                            columns=self.classes)
