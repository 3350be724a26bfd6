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
from river_pa.connectors.codec import BadRecord, decode_event
from river_pa.connectors.daemon import Daemon
from river_pa.connectors.kafka_io import make_offsets_client

__all__ = ["Predictor"]

log = logging.getLogger("river_pa.serve")


class Predictor(Daemon):
    """A daemon that predicts with the newest model in `cfg.model_topic` and learns nothing."""

    snapshot: dict | None = None  # learned, events, published_at_ms of the model in use

    def _start(self) -> None:
        """Read the model topic to its end, then wait for a first snapshot if there is none."""
        self._read_snapshot(self.cfg.model_topic, "model")  # creates the topic if missing
        self.model_consumer = make_offsets_client(self.cfg)
        self.model_reader = snapshots.Reader(self.model_consumer, self.cfg.model_topic, "model")
        self.model_reader.read_to_end(120)
        if self.model_reader.manifest is None:
            log.info("waiting for the first model snapshot in %s", self.cfg.model_topic)
        while self.model_reader.manifest is None and not self.stopping:
            self.model_reader.poll(500)
        self._swap_model()

    def load(self, consumer) -> None:
        """Nothing to load but offsets: a rollback seeks to the committed ones."""
        self.next_offsets = {}

    def _step(self) -> None:
        super()._step()
        self.model_reader.poll(0)
        self._swap_model()

    def _swap_model(self) -> None:
        manifest = self.model_reader.manifest
        if manifest is None or (self.model_manifest and
                                manifest["version"] == self.model_manifest["version"]):
            return
        manifest, payload = self.model_reader.newest()
        path = Path(self.cfg.checkpoint_path + ".model")
        checkpoint._write_private(path, payload)  # so it is verified like any checkpoint
        state = checkpoint.load(path, self.fresh_meta, self.key)
        self.model, self.model_manifest = state["model"], manifest
        self.snapshot = {k: state[k] for k in ("learned", "events", "published_at_ms")}
        self.events_at_publish = self.stats.counts["events"]
        log.info("model version %d from %s (%d events learned)", manifest["version"],
                 self.cfg.model_topic, state["learned"])

    def _on_event(self, record) -> None:
        try:
            event = decode_event(record.value, self.check_label, self.cfg.max_record_bytes)
        except BadRecord as exc:
            return self._dead_letter(record, exc)
        self.stats.counts["events"] += 1
        self.events_this_run += 1
        y_pred, proba = self._predict(event.x)
        self._emit(record, event, y_pred, proba)

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
            if hasattr(self, "model_consumer"):
                self.model_consumer.close()
