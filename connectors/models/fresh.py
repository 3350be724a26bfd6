"""Fresh challengers: `--on-drift challenger` answers a drift of the served model by starting
a fresh copy of it (the same model and parameters, having learned nothing) as a challenger.

The copy is named ``fresh-L``, L the served model's labels when the drift was found
(``fresh-L.2`` when a model has that name); it learns from the label that showed the drift on,
is scored on the events it predicts and duels the served model like any challenger, so
`--auto-promote` promotes it once it is better (or `river-pa models promote fresh-L`). Only the
challengers the learner made itself count towards a bound: the fresh copy, and the model a
promotion of it demoted when that is the model that drifted (not a --challenger promoted in
between). A new drift drops the ones an earlier drift made before it starts its own (the
concept they learned has drifted away too), so a stream that drifts for ever keeps at most one
of each. Their names are part of the learner's state (``control["made"]``): a restored learner
continues them exactly, and one dropped does not come back as a --challenger of a restart; a
--challenger of a restart that gives a made name other parameters makes it theirs.

"""

from __future__ import annotations

import functools
import logging

from river_pa.connectors.models.challengers import Challenger
from river_pa.connectors.observe.drift import parse_on_drift, reactions
from river_pa.connectors.state import checkpoint

__all__ = ["FreshChallengers"]

log = logging.getLogger("river_pa.serve")


class FreshChallengers:
    """The learner's side of `--on-drift challenger`."""

    @functools.cached_property
    def _on_drift(self) -> tuple[str, dict]:
        return parse_on_drift(self.cfg.on_drift)  # checked at start (checks.py)

    def _reaction(self, name: str) -> str:
        """What a drift of model `name` does (`--on-drift`): log, reset or challenger."""
        default, own = self._on_drift
        return own.get(name, default)

    def _makes_fresh(self) -> bool:
        """Whether a drift may start a fresh challenger."""
        return "challenger" in reactions(self.cfg.on_drift)

    def _start_fresh(self) -> str:
        """Drop the challengers earlier drifts made and start a fresh copy of the served model
        as challenger; its name."""
        configured = dict(self._challenger_models)
        for name in self.control["made"]:
            if name in self.challengers:
                self._drop_challenger(name)
                log.info("challenger %s dropped: made by an earlier drift", name)
            if name in configured or name in self.control["models"]:
                self.control["models"][name] = None  # not brought back by a restart
        name = base = f"fresh-{self.stats.counts['labelled']}"
        taken = {self.slot.name, *self.challengers, *(self.backfills or {})}
        for k in range(2, len(taken) + 2):  # a name `models add` gave: fresh-L.2, ...
            if name not in taken:
                break
            name = f"{base}.{k}"
        model = self.slot.pristine.clone()
        self.challengers[name] = Challenger(name, model, self._new_stats(model), self._duel())
        self.control["made"], self.control["drifted"] = [name], self.slot.name
        self.since_checkpoint = max(self.since_checkpoint, 1)
        return name

    def _made_promoted(self, name: str, old: str, demoted: str) -> None:
        """Challenger `name` was promoted and the served model `old` demoted as `demoted`: the
        model whose drift made the newest copy is followed under its new name; a made one that
        serves is no longer bounded, and the model that drifted is in its place when it is a
        challenger (not a --challenger promoted in between)."""
        drifted = self.control["drifted"]
        if drifted == old:  # the model that drifted goes on as a challenger
            drifted = demoted
        elif drifted == name:  # ... or serves again
            drifted = self.slot.name
        made = self.control["made"]
        if name in made:
            made.remove(name)
            if drifted in self.challengers:
                made.append(drifted)
            drifted = None
        self.control["drifted"] = drifted

    def _made_removed(self, name: str) -> None:
        if name in self.control["made"]:
            self.control["made"].remove(name)

    def _restore_made(self, saved: dict) -> set:
        """Continue the made challengers of a restored state (`saved`: its challengers, those
        continued taken out); a name another source already gave (--challenger, `models add`)
        is theirs unless it continues the made one (the same model and parameters). The names
        continued."""
        kept, restored = [], set()
        for name in self.control["made"]:
            state = saved.get(name)
            if name in self.challengers:
                if isinstance(state, dict) and checkpoint.same_meta(
                        state.get("meta"), self.challengers[name].slot.meta):
                    kept.append(name)
                continue
            if not (isinstance(state, dict) and hasattr(state.get("model"), "clone")):
                continue
            model = state["model"]  # the slot keeps a pristine clone; restore checks the rest
            challenger = Challenger(name, model, self._new_stats(model), self._duel())
            if challenger.restore(state):
                self.challengers[name] = challenger
                kept.append(name)
                restored.add(name)
                del saved[name]
        self.control["made"] = kept
        return restored
