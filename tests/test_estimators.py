"""River's `check_estimator` for every class in `river_pa.__all__`, on each `_unit_test_params`.

River's checks download two data sets at run time, which fails here: the multilabel checks'
Music is replaced by the first 50 events of the shared emotions set (500 for
check_bounded_memory_growth, which River runs on a 10x longer stream), and the anomaly checks'
CreditCard by River's bundled Shuttle (1,000 events, 68 anomalies; 10,000 for the memory
check). Every other data set is River's own. Checks are skipped only through a learner's
`_unit_test_skips()`, which says why. The optimizer `RescaledExp` runs the checks inside River's
`LogisticRegression` and `LinearRegression`.

"""

from __future__ import annotations

import copy
import functools
import inspect
import pickle

import numpy as np
import pytest
from river import base, checks, datasets, linear_model

import river_pa
from river_pa._core.cache import DeepCopy


class _Local:
    """A re-iterable local data set standing in for River's remote one."""

    def __init__(self, rows):
        self.rows = rows

    def __iter__(self):
        return iter(self.rows)


def params_id(params: dict) -> str:
    """`params` as a test id, functions by their name: a function's repr holds its address,
    which differs between pytest-xdist's workers, and they must collect the same ids."""
    return str({k: v.__name__ if callable(v) and hasattr(v, "__name__") else v
                for k, v in params.items()})


def _models():
    for name in river_pa.__all__:
        cls = getattr(river_pa, name)
        if not inspect.isclass(cls):
            continue
        if issubclass(cls, river_pa.RescaledExp):
            for params in cls._unit_test_params():
                yield pytest.param(linear_model.LogisticRegression(optimizer=cls(**params)),
                                   id=f"LogisticRegression({cls.__name__}{params_id(params)})")
                yield pytest.param(linear_model.LinearRegression(optimizer=cls(**params)),
                                   id=f"LinearRegression({cls.__name__}{params_id(params)})")
            continue
        for params in cls._unit_test_params():
            yield pytest.param(cls(**params), id=f"{name}{params_id(params)}")


def test_every_public_class_is_checked():
    checked = {type(p.values[0]).__name__ for p in _models()}
    checked |= {p.values[0].optimizer.__class__.__name__ for p in _models()
                if isinstance(p.values[0], linear_model.base.GLM)}
    assert checked >= {n for n in river_pa.__all__ if inspect.isclass(getattr(river_pa, n))}


@pytest.mark.parametrize("model", list(_models()))
def test_check_estimator(model, monkeypatch, emotions):
    original = checks._yield_datasets

    def local_datasets(model, scale=1):
        if isinstance(model, base.MultiLabelClassifier):
            yield _Local(emotions(50 * scale))
        elif isinstance(model, base.AnomalyDetector):
            yield datasets.Shuttle().take(1000 * scale)
        else:
            yield from original(model, scale)

    monkeypatch.setattr(checks, "_yield_datasets", local_datasets)
    ran = []
    for check in checks.yield_checks(model):
        if check.__name__ in model._unit_test_skips():
            continue
        check(model.clone())
        ran.append(check.__name__)
    # every data-driven check ran on some data (a plain Estimator, the sequence tagger, gets
    # none from River: its sequence versions are in tests/structured)
    data_checks = {"check_learn_one", "check_pickling", "check_bounded_memory_growth"}
    if isinstance(model, river_pa.PASequenceTagger):
        assert "check_pickling_supports_roundtrip" in ran and not data_checks & set(ran)
    else:
        assert data_checks - model._unit_test_skips() <= set(ran)
    if isinstance(model, base.AnomalyDetector):
        assert "check_roc_auc" in ran


@pytest.mark.parametrize("model", list(_models()))
def test_repr_shows_the_parameters_only(model):
    text = repr(model)
    assert "array(" not in text and " object at " not in text
    for name in model._get_params():
        assert name in text


@pytest.mark.parametrize("model", [p for p in _models()
                                   if isinstance(p.values[0], DeepCopy)])
def test_a_shallow_copy_owns_its_state(model):
    """copy.copy(model) copies deeply: a shallow copy shared the feature index and the
    arrays sized by it, so once one copy grew them the other's kernels read and wrote past
    its own arrays (a segfault on PAClassifier's Numba path and on PASequenceTagger)."""
    twin = copy.copy(model)
    assert type(twin) is type(model)
    for name, value in vars(model).items():
        if isinstance(value, (np.ndarray, dict, list, set)) or (hasattr(value, "__dict__")
                                                                and not callable(value)):
            assert getattr(twin, name) is not value, name


@pytest.mark.parametrize("labels", [("A", "B", "C"), ("variant", "C", "A")])
def test_a_label_spelled_like_an_attribute_pickles_to_the_same_bytes_again(labels):
    """A literal label is the interned str an attribute name is, and a pickle writes the two
    as one object; loading keeps that sharing (2e92bd6 interned the loaded names and broke it,
    found by helper-49). Labels built at run time as 1-character strs are left: CPython's
    unpickler returns its 1-character singleton for them, which a name may then share."""
    model = river_pa.PAMultiClassifier()
    for i in range(6):
        model.learn_one({"x": float(i), "y": 1.0}, labels[i % 3])
    loaded = pickle.loads(pickle.dumps(model))
    assert pickle.dumps(loaded) == pickle.dumps(model)
