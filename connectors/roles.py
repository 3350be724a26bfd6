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
        self.events_at_publish = self.stats.counts["events"]
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

    def _report(self) -> dict:
        """The report, with the model in use and how stale it is: seconds since the learner
        published it, and events this predictor served with it."""
        staleness = {"model_version": None, "model_learned": None, "model_age_s": None,
                     "events_since_model": None}
        if self.snapshot is not None:
            staleness = {"model_version": self.model_manifest["version"],
                         "model_learned": self.snapshot["learned"],
                         "model_age_s": time.time() - self.snapshot["published_at_ms"] / 1000,
                         "events_since_model": self.stats.counts["events"] - self.events_at_publish}
        snapshot = {**self.stats.snapshot(0), "early_labels": 0, **staleness}
        return self.reporter.publish(snapshot, self.events_this_run)

    def run(self) -> int:
        try:
            return super().run()
        finally:
            if hasattr(self, "model_reader"):
                self.model_reader.consumer.close()
