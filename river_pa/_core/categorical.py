"""Categorical values in feature dicts: a string value is a one-hot feature.

With a learner's ``categorical=True``, an event ``{"age": 31, "country": "FR"}`` is learned as
``{"age": 31, ("country", "FR"): 1.0}``: the feature key and its string value together name a
feature of value 1, as River's ``preprocessing.OneHotEncoder`` would name it ``"country_FR"``
(a tuple cannot be confused with another feature's name, ``"country_F" + "R"``). A list or set
of strings (``{"tags": ["a", "b"]}``) is one such feature per distinct string, as the
encoder does. The key then goes through the learner's vocabulary or the hashing trick like any
other (`river_pa._core.features.stable_hash` hashes a tuple of strings stably).

Numbers pass unchanged, and a value that is neither a number nor a string (None, a dict, a list
holding a number) is left for the learner's own check, which raises TypeError naming the
feature: a missing value is no category.

"""

from __future__ import annotations

__all__ = ["check_categorical", "one_hot"]

_PLAIN_NUMBERS = frozenset((float, int, bool))


def one_hot(x: dict) -> dict:
    """`x` with each string value `v` of a key `k` as the key ``(k, v)`` of value 1.0.

    `x` itself when every value is a plain float, int or bool (the check is one pass in C, so
    a numeric event costs ~0.1-0.2 us more); else a new dict in `x`'s order, the one-hot
    features in the place of their key. A str subclass (numpy's ``str_``) becomes a str. A list
    or set whose items are all strings gives one feature per distinct item (none when empty);
    any other value is kept as it is, for the learner to refuse.

    >>> one_hot({"age": 31, "country": "FR"})
    {'age': 31, ('country', 'FR'): 1.0}
    >>> one_hot({"tags": ["a", "b", "a"], "n": 2.5})
    {('tags', 'a'): 1.0, ('tags', 'b'): 1.0, 'n': 2.5}

    """
    if _PLAIN_NUMBERS.issuperset(map(type, x.values())):
        return x
    out = {}
    for k, v in x.items():
        if isinstance(v, str):
            out[k, v if v.__class__ is str else str(v)] = 1.0
        elif isinstance(v, list | set) and v and all(isinstance(e, str) for e in v):
            for e in v:
                out[k, e if e.__class__ is str else str(e)] = 1.0
        elif not isinstance(v, list | set) or v:
            out[k] = v  # a number, or a value the learner refuses (naming k)
    return out


def check_categorical(categorical) -> None:
    """Raise ValueError unless `categorical` is True or False.

    >>> check_categorical("yes")
    Traceback (most recent call last):
    ...
    ValueError: categorical must be True or False, got 'yes'

    """
    if categorical is not True and categorical is not False:
        raise ValueError(f"categorical must be True or False, got {categorical!r}")
