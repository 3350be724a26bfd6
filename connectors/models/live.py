"""Challengers added and removed while serving: `river-pa models add NAME SPEC` and
`river-pa models remove NAME` (control records, models/control.py).

An added challenger learns from the next label on, like a `--challenger` new to a restart:
scored only on the events it predicted (its metric says how many), never on the pending events
predicted before it came. SPEC names one of river-pa's learners with its parameters as JSON
(`PAClassifier{"C": 0.1}`); an import path (`module:attribute`) is refused, since a record of the
control topic must run no code. A removed challenger's model, metrics and pending predictions
are dropped. What the control records said is part of the learner's state
(``control["models"]``: {name: SPEC, or None when removed}) and wins over `--challenger` for
the names it holds: a restarted learner keeps a challenger added live, and does not bring back
one removed live that its `--challenger` still names (one line says so). With `--backfill` an
added challenger learns the retained history first (models/backfill.py).

"""

from __future__ import annotations

import logging

from river_pa.connectors.models.challengers import Challenger, make_challengers, parse_challenger
from river_pa.connectors.state import checkpoint

__all__ = ["LiveModels", "check_spec"]

log = logging.getLogger("river_pa.serve")


def check_spec(name: str, spec: str) -> tuple[str, dict]:
    """(model, parameters) of a challenger `spec` given in a control record; ValueError when
    it is not NAME=SPEC or names no river-pa learner (an import path runs code).

    >>> check_spec("c02", 'PAClassifier{"C": 0.1}')
    ('PAClassifier', {'C': 0.1})
    >>> check_spec("c02", "os:system")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: model 'os:system' is not one of river-pa's learners ...

    """
    from river_pa.registry import learners

    _, model, params = parse_challenger(f"{name}={spec}")
    if model not in learners():
        raise ValueError(f"model {model!r:.80} is not one of river-pa's learners (a control "
                         "record runs no code: a model from a module is a --challenger of a "
                         "restart)")
    return model, params


class LiveModels:
    """The learner's side of `add` and `remove`."""

    def _add(self, name: str, spec: str, where: str, backfill: bool = False) -> str:
        """Learn challenger `name` (`spec`) from now on, or first on the topics' retained
        history (`backfill`, models/backfill.py); what became of the command."""
        if name == self.slot.name or name in self.challengers or name in (self.backfills or {}):
            found = f"a model named {name!r:.80} exists (remove it first)"
        else:
            found = self._live_challenger(name, spec)
        if isinstance(found, str):
            log.warning("%s: add %.80s: %s; nothing changes", where, name, found)
            return f"not added: {found}"
        self.control["models"][name] = spec
        self.since_checkpoint = max(self.since_checkpoint, 1)
        if backfill:
            self.control["backfilling"].append(name)
            self._start_backfill(name, found)
            log.warning("%s: challenger %s added (%s): it learns the retained history first, "
                        "then joins the live models", where, name, spec)
            return "added, backfilling"
        self.challengers[name] = found
        log.warning("%s: challenger %s added (%s): it learns from the next label on, scored on "
                    "the events it predicts", where, name, spec)
        return "added"

    def _remove(self, name: str, where: str) -> str:
        """Drop challenger `name`; what became of the command."""
        pinned = (self.control["pinned"] or {}).get("name")
        if name in (self.backfills or {}):
            self._stop_backfills([name])
            self.control["backfilling"].remove(name)
        elif name not in self.challengers or name == pinned or name not in self.control[
                "made"] and checkpoint.same_meta(self.challengers[name].slot.meta,
                                                 self.configured.meta):
            why = ("it serves (promote another model first)" if name == self.slot.name else
                   "no challenger of that name" if name not in self.challengers else
                   "a version of it is pinned (`river-pa models unpin` first)" if name == pinned
                   else "it is --model, which a restart loads the state with (promote it back, "
                   "or start a learner with another --model)")
            log.warning("%s: remove %.80r: %s; nothing changes", where, name, why)
            return f"not removed: {why}"
        else:
            self._drop_challenger(name)
            self._made_removed(name)
        self.control["models"][name] = None
        self.since_checkpoint = max(self.since_checkpoint, 1)
        log.warning("%s: challenger %s removed: its model, metrics and pending predictions are "
                    "dropped", where, name)
        return "removed"

    def _drop_challenger(self, name: str) -> None:
        del self.challengers[name]
        self._drop_snapshots(name)
        for entry in self.pending.entries():
            if entry.others:
                entry.others.pop(name, None)

    def _live_challenger(self, name: str, spec: str) -> Challenger | str:
        """A new challenger `name` of `spec`, or why there is none (not a river-pa learner,
        bad parameters, another task than the served model's, the same model and parameters
        as one the learner has)."""
        try:
            check_spec(name, spec)
            (_, model), = make_challengers([f"{name}={spec}"], self.slot.pristine,
                                           self.cfg.metric)
        except ValueError as exc:
            return str(exc)
        meta = checkpoint.metadata(model)
        twin = next((n for n, c in {self.slot.name: self.slot, **{
            n: c.slot for n, c in self.challengers.items()}}.items()
            if checkpoint.same_meta(c.meta, meta)), None)
        if twin is not None:
            return f"the same model and parameters as {twin}"
        return Challenger(name, model, self._new_stats(model), self._duel())

    def _live_changes(self) -> None:
        """Apply the restored state's live additions and removals to this start's
        challengers (before they continue from the state): they win over --challenger."""
        for name, spec in self.control["models"].items():
            if name == self.slot.name or name in self.control["backfilling"]:
                continue  # promoted since (the state's model serves), or not joined yet
            if spec is None:
                if self.challengers.pop(name, None) is not None:
                    log.info("challenger %s: removed by `river-pa models remove`, not learned "
                             "(drop it from --challenger)", name)
            elif not (name in self.challengers
                      and self._same_spec(self.challengers[name], spec)):
                if name in self.challengers:
                    log.warning("challenger %s: `river-pa models add` gave it %s, which wins over "
                                "its --challenger (remove it to let --challenger name it)",
                                name, spec)
                    del self.challengers[name]
                found = self._live_challenger(name, spec)
                if isinstance(found, str):
                    log.warning("challenger %s added by `river-pa models add` not restored: %s",
                                name, found)
                else:
                    self.challengers[name] = found

    @staticmethod
    def _same_spec(challenger: Challenger, spec: str) -> bool:
        from river_pa.registry import make_model

        try:
            model = make_model(*check_spec(challenger.name, spec))
        except ValueError:
            return False
        return checkpoint.same_meta(checkpoint.metadata(model), challenger.slot.meta)
