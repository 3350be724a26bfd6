"""The benchmark streams named in the issues, generated deterministically.

* `phishing_x20()`: River's bundled Phishing (1,250 events, 9 features) repeated 20 times.
* `dense(n, d)`: n events of d dense features ``f0..f{d-1}`` (200k x 20 and 20k x 1000).
* `sparse(n, active, vocabulary)`: n events of `active` features drawn from `vocabulary` string
  keys ``k0..`` (200k events, 30 of 2^18 keys).
* `categorical(n)`: n events of 3 numbers ``x0..x2`` then 3 string values (``country``, one of
  40, Zipf-like; ``device``, one of 4; ``item``, one of 500) and ``tags``, a list of 0-2 of 20
  strings: the categorical stream of issue 23.
* `elec2_categorical()`: the shared Elec2 (45,312 events) with its time as categories: the
  five prices and demands as numbers, then ``weekday`` ("Tue" first: the set starts on 7 May
  1996, 48 half-hours a day) and ``slot`` ("00:00" .. "23:30", from ``period``), label
  ``class``.

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


def categorical(n: int = 20_000, seed: int = 0) -> list[tuple[dict, bool]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    levels = {"country": 40, "device": 4, "item": 500}
    codes = {k: rng.zipf(1.5, size=n) % m for k, m in levels.items()}
    tags = rng.integers(0, 20, size=(n, 2))
    n_tags = rng.integers(0, 3, size=n)
    score = X @ rng.normal(size=3)
    for k, m in levels.items():
        score += rng.normal(size=m)[codes[k]]
    score += np.where(np.arange(2) < n_tags[:, None], rng.normal(size=20)[tags], 0.0).sum(axis=1)
    y = _labels(score, rng)
    events = []
    for i, row in enumerate(X.tolist()):
        x = {"x0": row[0], "x1": row[1], "x2": row[2]}
        x.update({k: f"{k[0]}{codes[k][i]}" for k in levels})
        x["tags"] = list(dict.fromkeys(f"t{t}" for t in tags[i, :n_tags[i]].tolist()))
        events.append((x, y[i]))
    return events


WEEKDAYS = ("Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Mon")


def elec2_categorical() -> list[tuple[dict, bool]]:
    from river_pa.evaluate.datasets import load

    data = load("elec2")
    events = []
    for i, (x, y) in enumerate(zip(data.x, data.y)):
        slot = round(x["period"] * 47)
        event = {k: v for k, v in x.items() if k != "period"}
        event["weekday"] = WEEKDAYS[i // 48 % 7]
        event["slot"] = f"{slot // 2:02d}:{30 * (slot % 2):02d}"
        events.append((event, y))
    return events


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
