"""Input checks of every learner, in one place: each raises an error naming the field and
the value, before the model changes.

"""

from __future__ import annotations

import math
import numbers

import numpy as np

from river_pa._core import _numba, jit
from river_pa._core.columns import csr_columns_sparse

VARIANTS = {"PA": _numba.PA, "PA-I": _numba.PA_I, "PA-II": _numba.PA_II}
_MAX_FLOAT = float(np.finfo(np.float64).max)
MAX_CLASSES = 1000  # the default bound on the classes a learner creates (see `max_classes`)

__all__ = [
    "MAX_CLASSES",
    "MAX_INPUT",
    "OutOfRangeError",
    "TooManyClassesError",
    "TooManyFeaturesError",
    "check_class_room",
    "check_count",
    "check_csr",
    "check_finite",
    "check_frame_dtypes",
    "check_greater",
    "check_input_value",
    "check_label",
    "check_nonnegative",
    "check_positive",
    "check_sample_weight",
    "check_sample_weights",
    "check_target",
    "check_targets",
    "check_value",
    "check_variant",
    "check_x",
    "encode_binary_label",
    "encode_binary_labels",
]


class TooManyClassesError(ValueError):
    """A label would create a class past the learner's `max_classes` bound.

    Raised before any state changes, so the model stays usable (the Kafka daemon dead-letters
    the record as ``too_many_classes``).

    """


class TooManyFeaturesError(ValueError):
    """Learning would give a `Vocabulary` more keys than its `max_keys` bound.

    Raised before any state changes, so the model stays usable (the Kafka daemon dead-letters
    the record as ``too_many_features``). Hashing (`n_features`) is bounded by construction.

    """


def check_class_room(owner, n: int, new: list) -> None:
    """Raise `TooManyClassesError` if the `new` labels (distinct, unseen) would take `owner`,
    which holds `n` classes, past its `max_classes`.

    >>> class Tagger:
    ...     max_classes = 2
    >>> check_class_room(Tagger(), 1, ["B", "C"])
    Traceback (most recent call last):
    ...
    river_pa._core.validation.TooManyClassesError: label 'C' would be class number 3 of Tagger, which holds at most max_classes=2

    """
    if n + len(new) > owner.max_classes:
        raise TooManyClassesError(
            f"label {new[owner.max_classes - n]!r} would be class number "
            f"{owner.max_classes + 1} of {type(owner).__name__}, which holds at most "
            f"max_classes={owner.max_classes}"
        )


def check_variant(variant: str) -> int:
    """The kernel code of a variant name, or a ValueError listing the valid names."""
    try:
        return VARIANTS[variant]
    except (KeyError, TypeError):
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}") from None


def check_value(key, value) -> float:
    """Return `value` as a float, or raise an error naming the feature.

    Raises
    ------
    TypeError
        If the value is not a real number (int, float, bool or a numpy real scalar).
    ValueError
        If the value is NaN or infinite.

    >>> check_value("age", 3)
    3.0
    >>> check_value("age", "3")
    Traceback (most recent call last):
    ...
    TypeError: feature 'age' has a non-numeric value '3' of type str
    >>> check_value("age", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: feature 'age' has a non-finite value nan

    """
    if not isinstance(value, numbers.Real | np.bool_):
        raise TypeError(
            f"feature {key!r} has a non-numeric value {value!r} of type {type(value).__name__}"
        )
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"feature {key!r} has a value out of the float64 range") from None
    if not math.isfinite(value):
        raise ValueError(f"feature {key!r} has a non-finite value {value!r}")
    return value


def check_label(label) -> None:
    """Raise TypeError for an unhashable label and ValueError for a missing one (None, NaN,
    pandas' NA or NaT).

    A missing label is no class: taken as one, a stream of NaN labels (each NaN unequal to
    itself) would grow the model without bound.

    >>> check_label(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: a label must not be NaN, got nan
    >>> check_label(None)
    Traceback (most recent call last):
    ...
    ValueError: a label must not be missing (None or NA), got None

    """
    hash(label)
    if isinstance(label, float | np.floating) and math.isnan(label):
        raise ValueError(f"a label must not be NaN, got {label!r}")
    if label is None or type(label).__name__ in ("NAType", "NaTType"):
        raise ValueError(f"a label must not be missing (None or NA), got {label!r}")


def check_count(name: str, value, allow_none: bool = False) -> None:
    """Raise a ValueError naming `name` unless `value` is an int >= 1 (or None, when
    `allow_none`)."""
    if value is None and allow_none:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        alternative = "None or " if allow_none else ""
        raise ValueError(f"{name} must be {alternative}an int >= 1, got {value!r}")


def check_x(x) -> None:
    """Raise TypeError unless the features `x` are a dict (River's convention).

    >>> check_x([1.0, 2.0])
    Traceback (most recent call last):
    ...
    TypeError: x must be a dict, got list

    """
    if not isinstance(x, dict):
        raise TypeError(f"x must be a dict, got {type(x).__name__}")


def _is_real(value) -> bool:
    """Whether `value` is an int or a float but not a bool (``C=True`` is no C = 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_nonnegative(name: str, value, allow_none: bool = False) -> None:
    """Raise a ValueError naming `name` unless `value` is a finite number >= 0 (or None, when
    `allow_none`); a bool is no number here."""
    if value is None and allow_none:
        return
    if not _is_real(value) or not 0 <= value < float("inf"):
        alternative = " or None" if allow_none else ""
        raise ValueError(f"{name} must be a finite number >= 0{alternative}, got {value!r}")


def check_greater(name: str, value, bound: float, shown: str) -> None:
    """Raise a ValueError naming `name` unless `value` is a finite number > `bound` (written
    `shown` in the message); a bool is no number here.

    >>> check_greater("alpha", 1.0, 9 / 8, "9/8")
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a finite number > 9/8, got 1.0

    """
    if not _is_real(value) or not bound < value < float("inf"):
        raise ValueError(f"{name} must be a finite number > {shown}, got {value!r}")


def check_positive(name: str, value) -> None:
    """Raise a ValueError naming `name` unless `value` is a finite number > 0; a bool is no
    number here.

    >>> check_positive("C", True)
    Traceback (most recent call last):
    ...
    ValueError: C must be a finite number > 0, got True

    """
    check_greater(name, value, 0, "0")


def check_finite(name: str, value) -> None:
    """Raise a ValueError naming `name` unless `value` is a finite number (not a bool)."""
    if not _is_real(value) or not abs(value) < float("inf"):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def check_sample_weight(w) -> float:
    """The sample weight as a float; a ValueError unless it is finite and >= 0."""
    if (not isinstance(w, int | float | np.integer | np.floating)
            or not 0 <= w < float("inf") or w > _MAX_FLOAT):
        raise ValueError(f"sample weight w must be a finite number >= 0, got {w!r}")
    return float(w)


def check_sample_weights(w, rows: int) -> np.ndarray:
    """Per-row sample weights of a batch (float64, `rows`; ones when None), validated.

    >>> check_sample_weights(None, 2)
    array([1., 1.])
    >>> check_sample_weights([1.0, -2.0], 2)
    Traceback (most recent call last):
    ...
    ValueError: sample weights w must be finite, >= 0 and one per row of X

    """
    if w is None:
        return np.ones(rows)
    sw = np.asarray(w, dtype=np.float64)
    if sw.shape != (rows,) or not (np.isfinite(sw).all() and (sw >= 0).all()):
        raise ValueError("sample weights w must be finite, >= 0 and one per row of X")
    return sw


def check_frame_dtypes(X: pd.DataFrame) -> bool:
    """Raise TypeError naming a non-numeric (or complex) column; return whether all columns are
    sparse.

    Sparse columns must have fill value 0 (ValueError otherwise). Each distinct dtype is checked
    once: hashing a pandas SparseDtype is slow, so sparse columns are checked by subtype.

    """
    import pandas as pd  # a DataFrame came, so pandas is loaded already
    from pandas.api.types import is_bool_dtype, is_complex_dtype, is_numeric_dtype

    dtypes = list(X.dtypes)
    sparse = bool(dtypes) and all(isinstance(d, pd.SparseDtype) for d in dtypes)
    base = [d.subtype for d in dtypes] if sparse else dtypes
    for dtype in set(base):
        if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype)) or is_complex_dtype(dtype):
            col = X.columns[base.index(dtype)]
            raise TypeError(f"feature {col!r} has non-numeric dtype {dtypes[base.index(dtype)]}")
    if sparse:
        fills = [d.fill_value for d in dtypes]
        for fill in set(fills):
            if pd.isna(fill) or fill != 0:
                col = X.columns[fills.index(fill)]
                raise ValueError(f"sparse feature columns must have fill value 0, {col!r} has "
                                 f"{fill!r}")
    return sparse


def _integer_array(name: str, values) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise TypeError(f"{name} must be a 1-D integer array, got {array.dtype} of shape "
                        f"{array.shape}")
    return array.astype(np.int64, copy=False)


def check_csr(indptr, indices, data, n_keys: int) -> tuple:
    """(indptr, data, columns, ranks) of a CSR batch, validated.

    `indptr` (n + 1 integers from 0, non-decreasing, ending at len(indices)) delimits the rows;
    `indices` (integers) are column numbers in 0..n_keys-1, each at most once per row (a dict
    has one value per key); `data` (real numbers, finite, one per index) are the values.
    TypeError for a wrong dtype, ValueError naming the row and column otherwise. Returns
    `indptr` as int64, `data` as float64, the column numbers used in order of first appearance
    (the order a `learn_one` loop meets them) and, for each entry, its column's rank in that
    order. Memory is O(len(indices)) whatever `n_keys`.

    >>> indptr, data, columns, ranks = check_csr([0, 2, 3], [5, 0, 5], [0.5, 1.0, 2.0], 6)
    >>> columns, ranks
    (array([5, 0]), array([0, 1, 0]))
    >>> check_csr([0, 2], [1, 1], [0.5, 1.0], 2)
    Traceback (most recent call last):
    ...
    ValueError: row 0 has column 1 twice

    """
    indptr, indices, data = csr_arrays(indptr, indices, data)
    if n_keys > 2 * len(indices) + 1024:  # a lookup table of n_keys would not be O(n)
        columns, ranks, bad, why = csr_columns_sparse(indptr, indices, n_keys)
    else:
        columns, ranks, bad, why = jit.kernel(_numba.csr_columns)(indptr, indices, n_keys)
    check_csr_entries(indptr, indices, data, n_keys, bad, why)
    return indptr, data, columns, ranks


def csr_arrays(indptr, indices, data) -> tuple:
    """(indptr, indices, data) as int64, int64 and float64 arrays, with `check_csr`'s
    TypeError for a wrong dtype and ValueError for inconsistent lengths."""
    indptr = _integer_array("indptr", indptr)
    indices = _integer_array("indices", indices)
    data = np.asarray(data)
    if data.ndim != 1 or data.dtype.kind not in "iufb":
        raise TypeError(f"data must be a 1-D array of real numbers, got {data.dtype} of shape "
                        f"{data.shape}")
    data = data.astype(np.float64, copy=False)
    n = len(indices)
    if (len(data) != n or len(indptr) == 0 or indptr[0] != 0 or indptr[-1] != n
            or (np.diff(indptr) < 0).any()):
        raise ValueError(f"indptr must rise from 0 to len(indices) and data must have one value "
                         f"per index: got indptr of length {len(indptr)} from "
                         f"{indptr[:1].tolist()} to {indptr[-1:].tolist()}, {n} indices, "
                         f"{len(data)} values")
    return indptr, indices, data


def check_csr_entries(indptr, indices, data, n_keys: int, bad: int, why: int) -> None:
    """`check_csr`'s ValueError for the bad entry `bad` (why 0: a column outside
    0..n_keys-1, 1: a column twice in its row; none when bad < 0), then for a non-finite
    value."""
    if bad >= 0:
        row = int(np.searchsorted(indptr, bad, side="right")) - 1
        column = int(indices[bad])
        if why == 0:
            raise ValueError(f"row {row} has column {column}, outside 0..{n_keys - 1} (the "
                             "columns of the keys given)")
        raise ValueError(f"row {row} has column {column} twice")
    finite = np.isfinite(data)
    if not finite.all():
        p = int(np.argmin(finite))
        row = int(np.searchsorted(indptr, p, side="right")) - 1
        raise ValueError(f"row {row} column {int(indices[p])} has a non-finite value {float(data[p])!r}")


_BINARY_TYPES = (bool, np.bool_, numbers.Integral, float, np.floating)


def encode_binary_label(y) -> float:
    """+1.0 or -1.0 for a binary label: bool, 0/1 or -1/+1 (numpy scalars too).

    Anything else raises ValueError: other numbers, str, missing labels (None, NaN, NA), and
    complex numbers, `Decimal` and arrays although they compare equal to 1.

    >>> encode_binary_label(True), encode_binary_label(0), encode_binary_label(-1)
    (1.0, -1.0, -1.0)
    >>> encode_binary_label("spam")
    Traceback (most recent call last):
    ...
    ValueError: PAClassifier is binary: labels must be bool, 0/1 or -1/+1, got 'spam'; for more than two classes or other labels use river_pa.PAMultiClassifier

    """
    if y is True:
        return 1.0
    if y is False:
        return -1.0
    if isinstance(y, _BINARY_TYPES):
        if y == 1:
            return 1.0
        if y == 0 or y == -1:
            return -1.0
    raise ValueError(
        f"PAClassifier is binary: labels must be bool, 0/1 or -1/+1, got {y!r}; "
        "for more than two classes or other labels use river_pa.PAMultiClassifier"
    )


def encode_binary_labels(y) -> np.ndarray:
    """`encode_binary_label` over an array of labels, vectorised for bool and numeric dtypes."""
    values = np.asarray(y)
    if values.dtype.kind == "b":
        return np.where(values, 1.0, -1.0)
    if values.dtype.kind not in "iuf":
        return np.array([encode_binary_label(v) for v in values], dtype=np.float64)
    positive = values == 1
    bad = ~(positive | (values == 0) | (values == -1))
    if bad.any():
        encode_binary_label(values[np.argmax(bad)].item())  # raises, naming the label
    return np.where(positive, 1.0, -1.0)


def check_target(y) -> float:
    """`y` as a float: ValueError when missing (None, NaN, NA) or not finite (an int beyond
    the float64 range too), TypeError unless a real number (numpy complex too)."""
    if y.__class__ is float and math.isfinite(y):
        return y
    if y is None or type(y).__name__ in ("NAType", "NaTType"):
        raise ValueError(f"target y must not be missing, got {y!r}")
    if isinstance(y, str) or not isinstance(y, numbers.Real | np.integer | np.floating):
        raise TypeError(f"target y must be a real number, got {y!r}")
    try:
        value = float(y)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"target y must be finite, got {y!r}")
    return value


def check_targets(y) -> np.ndarray:
    """`_check_target` over an array of targets, vectorised for numeric dtypes."""
    values = np.asarray(y)
    if values.dtype.kind not in "iufb":
        return np.array([check_target(v) for v in values], dtype=np.float64)
    values = values.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        check_target(values[np.argmin(finite)].item())  # raises, naming the target
    return values


MAX_INPUT = 1e150  # the bound on an input's numbers: squares and their sums stay finite


class OutOfRangeError(ValueError):
    """A finite input number at or beyond `MAX_INPUT` in magnitude (`check_input_value`)."""


def check_input_value(key, value) -> None:
    """Raise an error naming the feature when no model can take `value` as the value of
    feature `key` of an input record (a line of `river-pa evaluate`'s file, an event of
    `river-pa serve`): the project's one policy for raw inputs, so both give the same verdict
    on the same record. The model decides the rest (a river_pa learner raises `TypeError` on a
    string unless its features are categorical, `check_value`).

    Numbers pass when finite and below `MAX_INPUT` (1e150) in magnitude: beyond it a square
    overflows, and one such value turned a River `StandardScaler`'s variance into inf for good
    (every later event refused). Strings, booleans, None and a list of strings, numbers or
    booleans pass: a River pipeline takes them (`preprocessing.OneHotEncoder` strings and
    lists of categories, `preprocessing.StatImputer` None). Objects and nested lists do not:
    no River transformer or learner takes them as a feature's value.

    Raises
    ------
    TypeError
        If `value` is a dict, a list holding a container or None, or any other object.
    ValueError
        If `value` (or an item of its list) is a number that is NaN or infinite;
        `OutOfRangeError` (a ValueError) if it is finite but at or beyond 1e150 in magnitude.

    >>> check_input_value("country", "FR")
    >>> check_input_value("tags", ["sports", "news"])
    >>> check_input_value("tags", [["sports"]])
    Traceback (most recent call last):
    ...
    TypeError: feature 'tags' has a value of type list ([['sports']]): a feature value is a number, a string, true/false, null or a list of numbers, strings and true/false
    >>> check_input_value("age", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: feature 'age' has a non-finite value inf
    >>> check_input_value("salary", 1e308)
    Traceback (most recent call last):
    ...
    river_pa._core.validation.OutOfRangeError: feature 'salary' has a value 1e+308 beyond 1e150 in magnitude (its square overflows)

    """
    if value is None or isinstance(value, str | bool):
        return
    if isinstance(value, list) and all(isinstance(v, str | numbers.Real) for v in value):
        for item in value:
            if not isinstance(item, str | bool):
                _check_input_number(key, item)
        return
    if not isinstance(value, numbers.Real):
        shown = repr(value)
        shown = shown if len(shown) <= 40 else f"{shown[:37]}..."
        raise TypeError(f"feature {key!r} has a value of type {type(value).__name__} ({shown}): "
                        "a feature value is a number, a string, true/false, null or a list of "
                        "numbers, strings and true/false")
    _check_input_number(key, value)


def _check_input_number(key, value) -> None:
    if not -MAX_INPUT < check_value(key, value) < MAX_INPUT:
        raise OutOfRangeError(f"feature {key!r} has a value {float(value)!r} beyond 1e150 in "
                              "magnitude (its square overflows)")
