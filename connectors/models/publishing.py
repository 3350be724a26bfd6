"""The model topic's writer side: the learner publishes the live model as a signed snapshot when
due, and between snapshots a small progress record the predictors read to say how stale their
model is.

With the served model, each challenger that learned since its last one is published as its own
snapshot, `model@NAME` (predictors read only `model`): the model topic keeps the newest
`--keep-versions` of each model, and `river-pa models pin NAME VERSION` can serve any of them
(models/pinning.py). One numbering runs over all of them, so a version names one model; a
challenger's snapshots are tombstoned when it is dropped (`models remove`, a drift's fresh copy
replaced, or a restart's settings), so a deployment that makes models for ever keeps a bounded
topic."""

from __future__ import annotations

import time

from river_pa.connectors.state import checkpoint, snapshots

__all__ = ["ModelPublishing"]

PROGRESS_SECONDS = 1.0  # the learner publishes its progress at most this often


class ModelPublishing:
    """Publishing of the model slot to the model topic (a daemon whose policy publishes)."""

    def _publish(self) -> None:
        """The learner publishes the model when due, else the challengers that learned (a
        challenger added, or one that caught up with its backfill, while the served model
        learns nothing), else (at most every `PROGRESS_SECONDS`, when it learned) its
        progress: a small record beside the model the predictors read to say how stale their
        model is."""
        self._before_write()  # called after every batch: the lease consumer is polled there
        learned = self.stats.counts["learned"]
        if self._publish_due():
            self._publish_model()
        elif self._challengers_due():
            self._publish_challengers()
            self.last_publish = time.monotonic()
        elif (learned > self.learned_at_progress
              and time.monotonic() - self.progress_at >= PROGRESS_SECONDS):
            model = self.slot.manifest or {"term": 0, "version": 0}
            progress = {"learned": learned, "events": self.stats.counts["events"],
                        "time_ms": int(time.time() * 1000), "term": model["term"],
                        "version": model["version"]}
            snapshots.send_progress(self.outputs.send, self.cfg.model_topic, self.slot.snapshot,
                                    progress)
            self.progress_at, self.learned_at_progress = time.monotonic(), learned
            self.since_checkpoint = max(self.since_checkpoint, 1)  # checked at the checkpoint

    def _publish_committed(self) -> None:
        """Remember what the model topic holds once the outputs are committed (at start and
        after each checkpoint): a rollback returns to it (`_publish_rolled_back`)."""
        self.publish_committed = (self.learned_at_publish, self.events_at_publish,
                                  self.slot.manifest, self._kept())

    def _kept(self) -> tuple:
        """What each model-topic writer holds as kept (to tombstone in turn), and the
        challengers' snapshots found at start that no writer took yet."""
        writers = dict(self.model_publishers)
        if self.slot.publisher is not None:
            writers[None] = self.slot.publisher
        return {n: list(p.kept) for n, p in writers.items()}, dict(self.model_others)

    def _publish_rolled_back(self) -> None:
        """After a rollback: a snapshot sent since the last checkpoint may be gone with the
        transaction, so the model is due again as it was then (soak seed 562: a learner's
        last snapshot aborted with its transaction, never sent again; predictors kept a model
        of 1,188 events for 1,500 learned)."""
        if self.policy.publishes:
            self.learned_at_publish, self.events_at_publish, self.slot.manifest, (kept, others) \
                = self.publish_committed
            # and what the writers keep: the versions (and tombstones: a removal obeyed again
            # after the rollback) sent since are gone with the transaction
            self.model_others = dict(others)
            self.model_publishers = {n: p for n, p in self.model_publishers.items() if n in kept}
            for name, publisher in [*self.model_publishers.items(), (None, self.slot.publisher)]:
                if publisher is not None and name in kept:
                    publisher.kept = list(kept[name])

    def _publish_due(self) -> bool:
        """Whether the live model is due (never while a version is pinned: models/pinning.py)."""
        learned = self.stats.counts["learned"] > self.learned_at_publish
        return learned and self.control["pinned"] is None and (
            self.stats.counts["events"] - self.events_at_publish >= self.cfg.publish_every
            or time.monotonic() - self.last_publish >= self.cfg.publish_seconds)

    def _challengers_due(self) -> bool:
        """Whether a challenger learned since its last snapshot, `--publish-seconds` after the
        last publication (never while a version is pinned)."""
        return self.control["pinned"] is None and \
            time.monotonic() - self.last_publish >= self.cfg.publish_seconds and \
            any(map(_unpublished, self.challengers.values()))

    def _publish_soon(self) -> None:
        """Publish the model at the next `_publish` (another model serves: a promotion)."""
        self.learned_at_publish, self.last_publish = -1, float("-inf")

    def _publish_model(self) -> None:
        """Send the live model to the model topic as a signed checkpoint-format snapshot
        (checked, or committed with the transaction, at the next checkpoint)."""
        self._before_write()
        counts = self.stats.counts
        # its name, and every model of the deployment: a predictor configured with any of them
        # serves it (`checkpoint.dumps` names them in the header)
        state = {"model": self.slot.model, "learned": counts["learned"], "events": counts["events"],
                 "published_at_ms": int(time.time() * 1000), "name": self.slot.name,
                 "challengers": self._challenger_metas()}
        if shadow := self._shadow_models():  # for the predictors' --shadow predictions
            state["shadow"] = shadow
        self._send_snapshot(state, self.slot.model)
        self._publish_challengers()
        self.last_publish = time.monotonic()
        self.events_at_publish, self.learned_at_publish = counts["events"], counts["learned"]

    def _publish_challengers(self) -> None:
        """Send each challenger that learned since its last snapshot as its own (`model@NAME`),
        each naming every model of the deployment, as a pin of it needs (one that learned
        nothing yet has none: it would only push a version worth pinning out)."""
        self._drop_others()
        metas = self._deployment_metas()
        for name, challenger in self.challengers.items():
            if _unpublished(challenger):
                learned = challenger.stats.counts["learned"]
                state = {"model": challenger.slot.model, "learned": learned,
                         "events": self.stats.counts["events"], "name": name,
                         "published_at_ms": int(time.time() * 1000), "challengers": metas}
                self._send_snapshot(state, challenger.slot.model, self._model_publisher(name))
                challenger.published, challenger.published_as = learned, self.model_version

    def _own_newest(self, name: str) -> int | None:
        """The version of challenger `name`'s newest snapshot of its own (None: none)."""
        publisher = self.model_publishers.get(name)
        kept = publisher.kept if publisher is not None else self.model_others.get(name)
        return kept[-1]["version"] if kept else None

    def _model_publisher(self, name: str) -> snapshots.Publisher:
        """The writer of challenger `name`'s own snapshots (kept across promotions, removals
        and rollbacks for this term: the versions it wrote are the ones it tombstones)."""
        if name not in self.model_publishers:
            self.model_publishers[name] = snapshots.Publisher(
                self.cfg.model_topic, f"{self.slot.snapshot}@{name}", self.term,
                self.model_version, self.model_others.pop(name, []), self.cfg.keep_versions)
        return self.model_publishers[name]

    def _drop_others(self) -> None:
        """Tombstone the own snapshots found at start of models the deployment no longer has
        (a restart's settings dropped them)."""
        models = {self.slot.name, *self.challengers, *(self.backfills or {})}
        for name in [n for n in self.model_others if n not in models]:
            self._drop_snapshots(name)

    def _drop_snapshots(self, name: str) -> None:
        """Tombstone challenger `name`'s own snapshots (it is dropped)."""
        if self.policy.publishes:
            self._model_publisher(name).retire(self.outputs.send)
            self.since_checkpoint = max(self.since_checkpoint, 1)

    def _challenger_metas(self) -> dict:
        """{name: {"meta": ...}} of each challenger, for a snapshot's header (a predictor
        configured with any of them loads it)."""
        return {n: {"meta": c.slot.meta} for n, c in self.challengers.items()}

    def _deployment_metas(self) -> dict:
        """`_challenger_metas` and the served model's: every model of the deployment."""
        return {**self._challenger_metas(), self.slot.name: {"meta": self.slot.meta}}

    def _send_snapshot(self, state: dict, model, publisher=None) -> None:
        """Send `state` (with `model`, the one it serves) as the next version of `publisher`'s
        snapshot (the served model's by default), numbered above every version of the topic."""
        served = publisher is None
        publisher = publisher or self.slot.publisher
        publisher.version = max(publisher.version, self.model_version)
        payload = checkpoint.dumps(state, model, {}, self.key, publisher.next_stamp())
        manifest = publisher.publish(self.outputs.send, payload)
        self.model_version = manifest["version"]
        if served:
            self.slot.manifest = manifest
        # a checkpoint is due even when no record follows: it checks the sends (and commits
        # them, in the transaction); otherwise the last snapshot stayed invisible for ever
        self.since_checkpoint = max(self.since_checkpoint, 1)


def _unpublished(challenger) -> bool:
    """Whether `challenger` learned since its last snapshot of its own (and learned some)."""
    learned = challenger.stats.counts["learned"]
    return learned != challenger.published and learned > 0
