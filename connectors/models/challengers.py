"""Challengers: named models the learner learns beside the model it serves (the champion), on
the same merged stream, each scored by progressive validation on the same delayed labels.

`--challenger NAME=SPEC` (repeatable; SPEC is a `--model` value, optionally followed by its
parameters as a JSON object: `c01=PAClassifier{"C": 0.1}`) adds one. Each challenger predicts
every event when the champion does, keeps its prediction with the champion's in the pending
store, is scored and learns when the label comes (only a label the champion took: what the
champion refuses is dead-lettered once), and has its own metrics, rolling metrics and drift
watch. Challengers are part of the learner's state: a restored learner continues them; a
learner started with another set keeps the ones it still names (same model and parameters),
starts the new ones from nothing and drops the others, each said in one line. A challenger
that raises is counted (`errors`) and the record goes on; it never stops the daemon or the
champion. Predictors serve the champion only; `river-pa models promote NAME` (a control record,
models/control.py) or `--auto-promote` makes a challenger the champion while serving;
`river-pa models add` and `remove` change the challengers while serving (models/live.py).

"""

from __future__ import annotations

import functools
import json
import logging
import re
import shlex
from collections import deque

from river_pa.connectors.models.slot import ModelSlot
from river_pa.connectors.observe.drift import prediction_error
from river_pa.connectors.observe.reporting import Stats
from river_pa.connectors.state import checkpoint

__all__ = ["Challenger", "Duel", "make_challengers", "parse_challenger"]

log = logging.getLogger("river_pa.serve")

NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
ERROR_LINES = 10  # lines for a challenger's first errors; then one per power of ten


def parse_challenger(text: str) -> tuple[str, str, dict]:
    """(name, model, parameters) of a `--challenger` value; ValueError naming it otherwise.

    >>> parse_challenger('c01=PAClassifier{"C": 0.1}')
    ('c01', 'PAClassifier', {'C': 0.1})
    >>> parse_challenger("arow=mymodels:arow")
    ('arow', 'mymodels:arow', {})
    >>> parse_challenger("PAClassifier")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: challenger 'PAClassifier' must be NAME=MODEL or NAME=MODEL{JSON parameters}, ...

    """
    name, eq, spec = text.partition("=")
    model, brace, params = spec.partition("{")
    if not (eq and NAME.fullmatch(name) and model.strip()):
        raise ValueError(f"challenger {text!r:.80} must be NAME=MODEL or NAME=MODEL{{JSON "
                         "parameters}, NAME of 1-64 of a-z A-Z 0-9 _ . -")
    try:
        kwargs = json.loads(brace + params) if brace else {}
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise ValueError(f"challenger {name}: parameters {brace + params!r:.80} are not a JSON "
                         f"object ({str(exc):.80})") from None
    if not isinstance(kwargs, dict):
        raise ValueError(f"challenger {name}: parameters {brace + params!r:.80} are not a JSON "
                         "object")
    return name, model.strip(), kwargs


def make_challengers(specs: list[str], champion, metric: list[str]) -> list[tuple[str, object]]:
    """(name, new model) of each `--challenger` value in `specs`, for the served model
    `champion` scored by the `metric` names; ValueError naming the value for a bad one, a name
    given twice or the champion's (its series on /metrics are labelled by it), a model given
    twice, one of another task than the champion's (a regressor's numbers are all wrong
    labels), one that cannot be made, fails on a synthetic event or that the metric does not
    fit."""
    from river_pa.connectors.models.slot import check_model
    from river_pa.connectors.observe.reporting import serve_metrics
    from river_pa.registry import make_model

    made, served = [], type(champion).__name__
    for text in specs:
        name, spec, params = parse_challenger(text)
        if name == served or name in dict(made):
            raise ValueError(f"challenger {name}: the name is "
                             f"{'the served model' if name == served else 'given twice'}")
        try:
            model = make_model(spec, params)
            check_model(model)
            serve_metrics(metric, model)
        except ValueError as exc:  # make_model's words are --model's
            raise ValueError(f"challenger {name}: {str(exc).replace('--model ', 'model ')}") \
                from None
        if _task(model) != _task(champion):
            raise ValueError(f"challenger {name}: a {_task(model)} cannot challenge the served "
                             f"model, a {_task(champion)}")
        twin = next((n for n, m in made if checkpoint.same_meta(
            checkpoint.metadata(m), checkpoint.metadata(model))), None)
        if twin is not None:
            raise ValueError(f"challenger {name}: the same model and parameters as challenger "
                             f"{twin}")
        made.append((name, model))
    return made


def _task(model) -> str:
    from river import base

    for kind, name in ((base.Regressor, "regressor"),
                       (base.MultiLabelClassifier, "multilabel classifier"),
                       (base.Classifier, "classifier")):
        if isinstance(model, kind):  # a pipeline is its last step's kind
            return name
    return type(model).__name__


@functools.lru_cache(maxsize=4096)
def critical(n: int, alpha: float) -> int:
    """The fewest successes of `n` fair coin flips whose one-sided exact binomial p is at most
    `alpha` (the test's rejection bound: computed once per n, the test itself at every label
    cost 40 us, a learner's whole budget, when a challenger led).

    >>> critical(10, 0.05), critical(30, 0.01)
    (9, 22)

    """
    from scipy.stats import binom

    return int(binom.isf(alpha, n, 0.5)) + 1


class Duel:
    """A challenger against the served model on the last `window` labels both predicted: how
    often it was better (a smaller error: right where the served model was wrong, for a
    classifier), how often worse, and the one-sided exact binomial test of those discordant
    pairs (McNemar's exact test for a classifier, the sign test of the absolute errors for a
    regressor: Dietterich 1998, "Approximate statistical tests for comparing supervised
    classification learning algorithms", section 3.1).

    `beats` turns true when the test finds it better at level `alpha` with at least
    `min_labels` labels in the window, and false again only when p rises above ten times
    `alpha` (at most 0.5): a p wandering about `alpha` said "beats" and "no longer beats" 78
    times in 20,000 labels. `update` returns the new `beats` when it changes, else None. The
    test is repeated at every label: its level holds for each check, not for the stream.

    >>> duel = Duel(window=100, alpha=0.01, min_labels=50)
    >>> found = [duel.update(True, False, True) for _ in range(30)]  # it is right, served wrong
    >>> found.count(None), duel.figures()["p_value"]  # too few labels yet
    (30, 9.313225746154785e-10)
    >>> found = [duel.update(True, True, True) for _ in range(20)]  # both right: ties
    >>> found.index(True), duel.beats, duel.figures()["better"], duel.figures()["worse"]
    (19, True, 30, 0)

    """

    def __init__(self, window: int, alpha: float, min_labels: int):
        self.alpha, self.min_labels = alpha, min_labels
        self.outcomes: deque = deque(maxlen=window)  # +1 better, -1 worse, 0 a tie
        self.better = self.worse = 0
        self.beats = False

    def update(self, y, served, challenger) -> bool | None:
        """Take one label `y` and both predictions (None: none); the new `beats` when it
        changed."""
        mine, theirs = prediction_error(y, challenger), prediction_error(y, served)
        if mine is None or theirs is None:
            return None
        if len(self.outcomes) == self.outcomes.maxlen:
            dropped = self.outcomes[0]
            self.better -= dropped == 1
            self.worse -= dropped == -1
        outcome = (mine < theirs) - (mine > theirs)
        self.outcomes.append(outcome)
        self.better += outcome == 1
        self.worse += outcome == -1
        was, self.beats = self.beats, self._significant()
        return self.beats if self.beats != was else None

    def _significant(self) -> bool:
        b, w = self.better, self.worse
        level = min(0.5, 10 * self.alpha) if self.beats else self.alpha  # hysteresis
        return (len(self.outcomes) >= self.min_labels and b > w
                and b >= critical(b + w, level))

    def beats_at_alpha(self) -> bool:
        """Whether it beats the served model at `alpha` itself (`beats` holds up to p = ten
        times `alpha`): what `--auto-promote` acts on.

        >>> duel = Duel(window=100, alpha=0.01, min_labels=20)
        >>> _ = [duel.update(True, False, True) for _ in range(10)]  # better 10 times
        >>> _ = [duel.update(True, True, True) for _ in range(10)]  # ties
        >>> duel.beats, duel.beats_at_alpha()
        (True, True)
        >>> _ = [duel.update(True, True, False) for _ in range(2)]  # worse twice: p = 0.019
        >>> duel.beats, duel.beats_at_alpha(), round(duel.p_value(), 3)
        (True, False, 0.019)

        """
        b, w = self.better, self.worse
        return self.beats and b >= critical(b + w, self.alpha)

    def p_value(self) -> float:
        """P(at least `better` of the discordant pairs | both equally good)."""
        if self.better + self.worse == 0:
            return 1.0
        from scipy.stats import binomtest

        return float(binomtest(self.better, self.better + self.worse, 0.5,
                               alternative="greater").pvalue)

    def figures(self) -> dict:
        """The report's figures."""
        return {"window": len(self.outcomes), "better": self.better, "worse": self.worse,
                "p_value": self.p_value(), "beats": self.beats}


class Challenger:
    """One challenger: its `slot` (model, pristine copy, label check), its `stats`, its `duel`
    with the served model and the count of records it raised on (`errors`)."""

    def __init__(self, name: str, model, stats: Stats, duel: Duel):
        self.name = name
        self.slot = ModelSlot(model)
        self.stats = stats
        self.duel = duel
        self.errors = 0
        self.backfilled: dict | None = None  # what it learned of the history (backfill.py)
        # its labels learned at its last snapshot of its own, and that snapshot's version
        # (models/publishing.py)
        self.published, self.published_as = -1, None

    def predict(self, x: dict):
        """What its metric scores for event `x` (probabilities or a label); None when it
        raises (counted)."""
        uses_proba = self.stats.uses_proba
        try:
            y_pred, proba = self.slot.predict(x, uses_proba)
        except Exception as exc:
            return self._failed("predicting", exc)
        return proba if uses_proba else y_pred

    def score(self, y, y_pred, delay_ms: int | None, served) -> str | None:
        """Score `y_pred` (its prediction when the event came; None: it had none) against the
        label `y`, and against the served model's prediction `served`; what its drift watch
        found ("rise", "fall" or None)."""
        change = self.stats.score(y, y_pred, delay_ms)
        if (beats := self.duel.update(y, served, y_pred)) is not None:
            self._beats(beats)
        return change

    def learn(self, x: dict, y) -> None:
        """Learn (x, y)."""
        try:
            self.slot.model.learn_one(x, y)
        except Exception as exc:
            self._failed("learning", exc)
            return
        self.stats.counts["learned"] += 1

    def _beats(self, beats: bool) -> None:
        figures = self.duel.figures()
        log.log(logging.WARNING if beats else logging.INFO,
                "challenger %s %s the served model on the last %d labels: better on %d, worse "
                "on %d (exact binomial test of the discordant pairs, p = %.3g, level %g)%s",
                self.name, "beats" if beats else "no longer beats", figures["window"],
                figures["better"], figures["worse"], figures["p_value"], self.duel.alpha,
                f": promote it with `river-pa models promote {shlex.quote(self.name)}` (or "
                "--auto-promote)"
                if beats else "")

    def _failed(self, doing: str, exc: Exception) -> None:
        self.errors += 1
        if self.errors <= ERROR_LINES or str(self.errors).strip("0") == "1":
            line = f"{type(exc).__name__}: {exc}".splitlines()[0]
            log.warning("challenger %s failed %s (%d so far; the record goes on): %s",
                        self.name, doing, self.errors, line)

    def state(self) -> dict:
        """What the learner's state keeps of it."""
        return {"model": self.slot.model, "stats": self.stats, "errors": self.errors,
                "meta": self.slot.meta, "duel": self.duel, "backfilled": self.backfilled,
                "published": (self.published, self.published_as)}

    def restore(self, saved) -> bool:
        """Continue from `saved` (a `state()` of the state restored) when it is this
        challenger's model with these parameters; False otherwise (it starts afresh)."""
        if not (isinstance(saved, dict) and checkpoint.same_meta(saved.get("meta"), self.slot.meta)
                and isinstance(saved.get("model"), type(self.slot.pristine))
                and isinstance(saved.get("stats"), Stats)
                and isinstance(saved.get("errors"), int)):
            return False
        self.slot.model, self.stats, self.errors = saved["model"], saved["stats"], saved["errors"]
        published = saved.get("published")  # none in older states: published again
        if isinstance(published, tuple) and len(published) == 2 and type(published[0]) is int \
                and (published[1] is None or type(published[1]) is int):
            self.published, self.published_as = published
        backfilled = saved.get("backfilled")  # none in older states
        self.backfilled = backfilled if isinstance(backfilled, dict) else None
        duel = saved.get("duel")  # none after a promotion (another served model) or in older
        if isinstance(duel, Duel) and (duel.alpha, duel.min_labels, duel.outcomes.maxlen) == (
                self.duel.alpha, self.duel.min_labels, self.duel.outcomes.maxlen):
            self.duel = duel  # ... states; settings changed: it starts afresh
        return True

    def figures(self) -> dict:
        """The report's figures of this challenger."""
        scores, counts = self.stats.scores(), self.stats.counts
        return {"model": self.slot.name, "metrics": scores["metrics"],
                "rolling": scores["rolling"], "labelled": counts["labelled"],
                "learned": counts["learned"], "errors": self.errors,
                "versus_served": self.duel.figures(), "drift": scores["drift"],
                **({"backfilled": self.backfilled} if self.backfilled else {})}
