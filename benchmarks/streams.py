"""The benchmark streams named in the issues, generated deterministically.

* `phishing_x20()`: River's bundled Phishing (1,250 events, 9 features) repeated 20 times.
* `dense(n, d)`: n events of d dense features ``f0..f{d-1}`` (200k x 20 and 20k x 1000).
* `sparse(n, active, vocabulary)`: n events of `active` features drawn from `vocabulary` string
  keys ``k0..`` (200k events, 30 of 2^18 keys).

Labels come from a hidden linear separator with 5% label noise, so learners keep updating.

"""

from __future__ import annotations

import time

import numpy as np
from river import datasets


def phishing_x20() -> list[tuple[dict, bool]]:
    return list(datasets.Phishing()) * 20


def _labels(scores: np.ndarray, rng: np.random.Generator) -> list[bool]:
    flip = rng.random(len(scores)) < 0.05
    return ((scores > 0) ^ flip).tolist()


def dense(n: int = 200_000, d: int = 20, seed: int = 0) -> list[tuple[dict, bool]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = _labels(X @ rng.normal(size=d), rng)
    keys = [f"f{j}" for j in range(d)]
    return [(dict(zip(keys, row)), label) for row, label in zip(X.tolist(), y)]


def sparse(n: int = 200_000, active: int = 30, vocabulary: int = 2**18, seed: int = 0):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, vocabulary, size=(n, active))
    vals = rng.random((n, active))
    hidden = rng.normal(size=vocabulary)
    y = _labels((hidden[cols] * vals).sum(axis=1) - 0.0, rng)
    names = np.array([f"k{j}" for j in range(vocabulary)], dtype=object)
    return [
        (dict(zip(names[c].tolist(), v)), label)
        for c, v, label in zip(cols, vals.tolist(), y)
    ]


def to_libsvm(stream, path) -> None:
    """Write a stream of (dict with keys 'k<j>' or 'f<j>', bool) as a libsvm file (1-based)."""
    with open(path, "w") as f:
        for x, y in stream:
            feats = " ".join(f"{int(k[1:]) + 1}:{v!r}" for k, v in x.items())
            f.write(f"{'+1' if y else '-1'} {feats}\n")


def progressive_seconds(model, events, predict: str = "predict_one",
                        clock=time.perf_counter) -> float:
    """Seconds to run `predict` (`predict_one` or `predict_proba_one`) then `learn_one` over
    `events`, the progressive loop every benchmark times (`clock`: wall time by default;
    `time.thread_time` counts CPU time, steadier on busy cores)."""
    predict, learn = getattr(model, predict), model.learn_one
    start = clock()
    for x, y in events:
        predict(x)
        learn(x, y)
    return clock() - start
