"""The predictor role of `river-pa serve --role predict`: stateless serving of published models.

A predictor is one member of a consumer group on the events topic only. At start it reads the
newest model snapshot from the model topic (waiting for the first one, saying so), then
predicts, emits each prediction with the version of the model that made it, and commits. The
model topic is followed by a group-less consumer polled once between batches (no per-event
cost); a newer snapshot is verified (size, SHA-256, versions and HMAC like a checkpoint) and
swapped in. It keeps no other state: offsets are committed after the predictions they cover
are acknowledged, so a rebalance, a SIGKILL or a new node loses nothing.

"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from river_pa.connectors import checkpoint, snapshots
from river_pa.connectors.daemon import Daemon

__all__ = ["Predictor"]

log = logging.getLogger("river_pa.serve")


class Predictor(Daemon):
    """A daemon that predicts with the newest model in `cfg.model_topic` and learns nothing."""

    snapshot: dict | None = None  # learned, events, published_at_ms of the model in use
    seen_manifest: dict | None = None  # the newest manifest tried, accepted or not

    def _start(self) -> None:
        """Read the model topic to its end, then wait for a first snapshot if there is none."""
        self.model_reader = self._snapshot_reader(self.cfg.model_topic, "model")
        if self.model_reader.manifest is None:
            log.info("waiting for the first model snapshot in %s", self.cfg.model_topic)
        while not self._swap_model() and not self.stopping:
            self.model_reader.poll(500)

    def load(self, consumer) -> None:
        """Nothing to load but offsets: a rollback seeks to the committed ones."""
        self.next_offsets = {}

    def _step(self) -> None:
        super()._step()
        self.model_reader.poll(0)
        self._swap_model()

    def _swap_model(self) -> bool:
        """Swap in the newest snapshot if it is new; True when a model is in use. A snapshot
        that does not verify is logged and skipped: the model in use stays."""
        manifest = self.model_reader.manifest
        if manifest is None or manifest is self.seen_manifest:
            return self.model_manifest is not None
        self.seen_manifest = manifest
        path = Path(self.cfg.checkpoint_path + ".model")
        try:
            manifest, payload = self.model_reader.newest()
            checkpoint._write_private(path, payload)  # so it is verified like any checkpoint
            state = checkpoint.load(path, self.fresh_meta, self.key)
        except (snapshots.SnapshotError, checkpoint.CheckpointError) as exc:
            log.warning("model snapshot refused, keeping version %s: %s",
                        self.model_manifest and self.model_manifest["version"], exc)
            return self.model_manifest is not None
        self.model, self.model_manifest = state["model"], manifest
        self.snapshot = {k: state[k] for k in ("learned", "events", "published_at_ms")}
        log.info("model version %d from %s (%d events learned)", manifest["version"],
                 self.cfg.model_topic, state["learned"])
        return True

    def _after_prediction(self, record, event, y_pred, proba) -> None:
        """Nothing: the learner learns the event."""

    def _model_fields(self) -> dict:
        return {"n_learned": self.snapshot["learned"],
                "model_version": self.model_manifest["version"]}

    def _persist(self) -> None:
        """A predictor keeps nothing: its offsets alone are committed."""

    def figures(self) -> dict:
        """The report's figures, with the model in use and how stale it is: seconds since
        the learner published it (`model_age_s`), events the learner has learned since
        (`learned_since_model`, from its newest progress record) and the seconds they took
        (`stale_s`: 0 while the learner learns nothing, however old the model)."""
        staleness = dict.fromkeys(("model_version", "model_learned", "model_age_s",
                                   "learned_since_model", "stale_s"))
        snapshot, progress = self.snapshot, self.model_reader.progress
        if snapshot is not None:
            ahead = max(progress["learned"] - snapshot["learned"], 0) if progress else 0
            stale_ms = progress["time_ms"] - snapshot["published_at_ms"] if ahead else 0
            staleness = {"model_version": self.model_manifest["version"],
                         "model_learned": snapshot["learned"],
                         "model_age_s": time.time() - snapshot["published_at_ms"] / 1000,
                         "learned_since_model": ahead, "stale_s": max(stale_ms, 0) / 1000}
        return {**self.stats.snapshot(0), "early_labels": 0, "pending_bytes": 0, **staleness}

    def _readiness(self, assigned) -> tuple[bool, str]:
        """(ready, why not): partitions and a model (a predictor steps only once it has one)."""
        if self.model_manifest is None:
            return False, "no model yet"
        return super()._readiness(assigned)

    def run(self) -> int:
        try:
            return super().run()
        finally:
            if hasattr(self, "model_reader"):
                self.model_reader.consumer.close()
