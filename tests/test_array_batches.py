"""learn_many, predict_many and predict_proba_many of the multiclass, cost-sensitive, kernel and
multilabel learners take 2-D numpy arrays and scipy.sparse matrices (issue 12), bit for bit a
learn_one loop over the rows as dicts (a sparse row: its stored entries); targets pair with
rows by position. Before, numpy raised AttributeError ('no attribute columns'/'index') and CSR
"sparse array length is ambiguous"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from river import datasets

import river_pa

ROWS = list(datasets.ImageSegments().take(90))
KEYS = list(ROWS[0][0])
DENSE = np.array([[x[k] for k in KEYS] for x, _ in ROWS])
LABELS = [y for _, y in ROWS]
MULTILABEL = pd.DataFrame({"sky": [y == "sky" for y in LABELS],
                           "light": [y in ("sky", "cement", "window") for y in LABELS]},
                          index=range(100, 190))  # pairs by position, not by this index
CLASSES = [river_pa.PAMultiClassifier, river_pa.PACostSensitiveClassifier,
           river_pa.KernelPAClassifier, river_pa.PAMultiLabelClassifier]


def _dicts(X):
    if sp.issparse(X):
        X = X.tocsr()
        return [dict(zip((KEYS[j] for j in X.indices[X.indptr[i]:X.indptr[i + 1]]),
                         X.data[X.indptr[i]:X.indptr[i + 1]].tolist()))
                for i in range(X.shape[0])]
    return [dict(zip(KEYS, row.tolist())) for row in X]


def _learn(model, X, lo, hi):
    if isinstance(model, river_pa.PAMultiLabelClassifier):
        model.learn_many(X[lo:hi], MULTILABEL.iloc[lo:hi], columns=KEYS)
    else:
        model.learn_many(X[lo:hi], pd.Series(LABELS[lo:hi], index=range(hi, lo, -1)),
                         columns=KEYS)


@pytest.mark.parametrize("make", [np.asarray, sp.csr_matrix], ids=["numpy", "csr"])
@pytest.mark.parametrize("cls", CLASSES)
def test_array_batches_are_a_learn_one_loop(cls, make):
    X = make(np.where(DENSE > DENSE.mean(axis=0), DENSE, 0.0))  # about half the entries stored
    one, many = cls(), cls()
    for i, x in enumerate(_dicts(X)):
        one.learn_one(x, MULTILABEL.iloc[i].to_dict() if cls is CLASSES[-1] else LABELS[i])
    for lo in range(0, 90, 30):  # labels and features appear inside batches
        _learn(many, X, lo, lo + 30)
    assert many.classes == one.classes and len(one.classes) >= 2
    xs = _dicts(X)
    for x in xs:
        assert many.decision_function_one(x) == one.decision_function_one(x)
    predicted = many.predict_many(X, columns=KEYS)
    if cls is CLASSES[-1]:
        assert isinstance(predicted, pd.DataFrame) and predicted.index.tolist() == list(range(90))
        assert predicted.to_dict("records") == [one.predict_one(x) for x in xs]
    else:
        assert isinstance(predicted, np.ndarray)
        assert predicted.tolist() == [one.predict_one(x) for x in xs]
        proba = many.predict_proba_many(X, columns=KEYS)
        assert proba.to_dict("records")[:5] == [one.predict_proba_one(x) for x in xs[:5]]


@pytest.mark.parametrize("cls", CLASSES)
def test_other_batches_are_a_clear_type_error(cls):
    with pytest.raises(TypeError, match="X must be a pandas DataFrame, a 2-D numpy array or a "
                                        "scipy.sparse matrix, got list"):
        cls().predict_many([[1.0, 2.0]])
