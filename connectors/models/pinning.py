"""Rollback: `river-pa models pin NAME VERSION` makes the predictors serve an earlier version
of the model topic until `river-pa models unpin` or a promotion.

The learner obeys a pin (a control record, models/control.py) by publishing that version's
model again as the model topic's newest snapshot, marked ``"pinned": VERSION``: under a new
stamp, since readers only ever move to newer ones (a replayed old record still rolls no
predictor back), so predictors swap it in at their next poll like any model and name VERSION
in every prediction record they make with it. While pinned, the learner goes on learning every
model and publishes its progress, but no model; `unpin`, or a promotion, publishes the live
served model at once. The pin is part of the learner's state (``control["pinned"]``): a
failover, or a rollback with `--exactly-once`, keeps it. The model topic keeps the newest
`--keep-versions` versions of each model (state/snapshots.py): those are the ones a pin can
reach, a challenger's own (`model@NAME`, models/publishing.py) too: the predictors then serve
that version of the challenger. A daemon with `--role both` serves its own model and
publishes none: it refuses a pin.

"""

from __future__ import annotations

import logging
import time

from river_pa.connectors.state import checkpoint, snapshots

__all__ = ["Pinning"]

log = logging.getLogger("river_pa.serve")


class Pinning:
    """The learner's side of `pin` and `unpin` (a daemon whose policy publishes)."""

    def _pin(self, name: str, version: int, where: str) -> str:
        """Serve version `version` of model `name` from the model topic; what became of it."""
        if not self.policy.publishes:
            found = "this daemon serves its own model (--role both): a pin needs --role learn"
        else:
            found = self._published_version(name, version)
        if isinstance(found, dict) and found.get("name") != name:
            found = f"version {version} is of model {found.get('name')!r:.80}, not {name!r:.80}"
        if isinstance(found, str):
            log.warning("%s: pin %.80s version %d: %s; nothing changes", where, name, version,
                        found)
            return f"not pinned: {found}"
        state = {**found, "pinned": version, "published_at_ms": int(time.time() * 1000),
                 "challengers": self._deployment_metas()}
        self._send_snapshot(state, found["model"])
        self.control["pinned"] = {"name": name, "version": version}
        self.since_checkpoint = max(self.since_checkpoint, 1)
        log.warning("%s: version %d of %s pinned (%d events learned): predictors serve it until "
                    "`river-pa models unpin` or a promotion; the learner learns on and publishes "
                    "no model meanwhile", where, version, name, found["learned"])
        return "pinned"

    def _unpin(self, where: str) -> str:
        """Serve the live model again; what became of it."""
        pinned = self.control.get("pinned")
        if pinned is None:
            log.info("%s: unpin: no version is pinned", where)
            return "not pinned"
        self._end_pin(f"unpinned by {where}")
        return "unpinned"

    def _end_pin(self, why: str) -> None:
        """End the pin, if any: the live served model is published at the next batch."""
        pinned = self.control.get("pinned")
        if pinned is not None:
            self.control["pinned"] = None
            self._publish_soon()
            log.warning("version %d of %s %s: the predictors serve the live %s again",
                        pinned["version"], pinned["name"], why, self.slot.name)

    def _published_version(self, name: str, version: int) -> dict | str:
        """The state of version `version` of model `name`: a snapshot of the served model
        (`model`), or of its own as a challenger (`model@NAME`, models/publishing.py); else
        the served snapshot's version, whichever model it is of, or why there is none."""
        found = self._version_of(self.slot.snapshot, version)
        if isinstance(found, dict) and found.get("name") == name:
            return found
        own = self._version_of(f"{self.slot.snapshot}@{name}", version)
        return own if isinstance(own, dict) else found

    def _version_of(self, snapshot: str, version: int) -> dict | str:
        """The state of version `version` of `snapshot` in the model topic, or of a version
        that published it again (a pin obeyed again after a failover: the pin's own snapshot
        may have pushed the original out), verified like a snapshot a predictor loads; or why
        there is none."""
        topic = self.cfg.model_topic
        reader = self._snapshot_reader(topic, snapshot)
        try:
            for manifest, payload in reader.candidates():  # newest first
                if manifest["version"] < version:
                    break
                state = self._verified(manifest, payload)
                if isinstance(state, str) and manifest["version"] == version:
                    return state
                if isinstance(state, dict) and version in (manifest["version"],
                                                           state.get("pinned")):
                    return state
        finally:
            reader.close()
        return (f"no version {version} in {topic} (it keeps the newest --keep-versions "
                f"{self.cfg.keep_versions}; `river-pa models list` names them)")

    def _verified(self, manifest: dict, payload: bytes) -> dict | str:
        """The state of a version of the model topic, or why it does not verify."""
        where = f"version {manifest['version']} of {self.cfg.model_topic}"
        try:
            _, state = checkpoint.loads(payload, self.configured.meta, self.key, where,
                                        dict(zip(("term", "version"), snapshots.stamp(manifest))))
        except checkpoint.CheckpointError as exc:
            return str(exc)
        if not (isinstance(state, dict) and hasattr(state.get("model"), "predict_one")
                and type(state.get("learned")) is int):
            return f"{where} holds no model"
        return state
