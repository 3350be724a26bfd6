"""The predictor role of `river-pa serve --role predict`: stateless serving of published models.

A predictor is one member of a consumer group on the events topic only. At start it reads the
newest model snapshot from the model topic (waiting for the first one, saying so), then
predicts, emits each prediction with the version of the model that made it, and commits. The
model topic is followed by a group-less consumer polled once between batches (no per-event
cost); the newest snapshot newer (term, version) than the one in use that verifies (size,
SHA-256, versions, HMAC and restricted unpickling, like a checkpoint) is swapped in; the
others, a replayed older one among them, are logged, counted and skipped. It keeps no other
state: offsets are committed after the predictions they cover are acknowledged, so a
rebalance, a SIGKILL or a new node loses nothing.

"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter

from river_pa.connectors.codec import Event, decode_events
from river_pa.connectors.kafka.partitions import tp_key
from river_pa.connectors.state import snapshots
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.loop.policy import Policy
from river_pa.connectors.models.slot import MODEL_FIELDS

__all__ = ["Predictor"]

log = logging.getLogger("river_pa.serve")

BATCH_RECORDS = 100  # records decoded and predicted together (the deadline checked between)
CLOCK_SKEW_S = 60  # between the learner's clock and this one, or two learners' clocks
MAX_LEARN_RATE = 1_000_000  # events/s a learner can learn (the daemon measured 8.7k/s)


class Predictor(Daemon):
    """A daemon that predicts with the newest model in `cfg.model_topic` and learns nothing."""

    policy = Policy(learns=False, keeps_state=False)  # the learner learns; offsets only
    snapshot: dict | None = None  # learned, events, published_at_ms of the model in use
    shadow: dict = {}  # the challengers' models of the snapshot in use (name -> model)
    said_no_shadow = False  # --shadow given, and a snapshot without them was said once
    counts_at_commit: Counter = Counter()  # the counts at the last commit (none yet: zero)

    def _start(self) -> None:
        """Read the model topic to its end, then wait for a first snapshot if there is none."""
        self.model_reader = self._snapshot_reader(self.cfg.model_topic, self.slot.snapshot)
        if not self.model_reader.manifests():
            log.info("waiting for the first model snapshot in %s", self.cfg.model_topic)
        while not self._swap_model() and not self.stopping:
            self.model_reader.poll(500)

    def load(self) -> None:
        """Nothing to load but offsets (a rollback seeks to the committed ones) and the counts
        as they were at the last commit (the aborted events were counted twice in the
        reports: a new user's rolling restart gave 4,115 events for 4,000)."""
        self.next_offsets = {}
        self.stats.counts.clear()
        self.stats.counts.update(self.counts_at_commit)

    def _step(self) -> None:
        super()._step()
        self.model_reader.poll(0)
        self._swap_model()

    def _process_ready(self, deadline: float) -> int:
        """Process the records ready up to max_poll_records, `BATCH_RECORDS` at a time
        (`_serve_batch`) while the model predicts a batch at once (`ModelSlot.batches`), or
        one by one as the daemon does (a pipeline: a slow model meets the deadline between
        two events); stop once `deadline` (monotonic s) has passed. The model changes only
        between two polls (`_swap_model`)."""
        if not self.slot.batches():
            return super()._process_ready(deadline)
        ready, done, most = self.order.ready(), 0, self.cfg.max_poll_records
        while done < most and time.monotonic() <= deadline:
            records = list(itertools.islice(ready, min(BATCH_RECORDS, most - done)))
            if not records:
                break
            self._serve_batch(records)
            done += len(records)
        return done

    def _serve_batch(self, records: list) -> None:
        """Serve `records` (of the events topic, in merge order) as `_process` serves each:
        decoded together, the valid events predicted by `ModelSlot.predict_many` (those it
        leaves, and all of them when the model raises on the batch, predicted alone by
        `_serve_event`: only the one the model refuses is dead-lettered, as before), then
        each emitted (or dead-lettered) in order."""
        events = decode_events([r.value for r in records], self.slot.check_label,
                               self.cfg.max_record_bytes)
        try:
            predicted = iter(self.slot.predict_many(
                [e.x for e in events if e.__class__ is Event], self._with_proba()))
        except Exception:  # each event again, alone: `_serve_event` tells which one raised
            predicted = itertools.repeat(None)
        fields = self._prediction_fields()
        for record, event in zip(records, events):
            if event.__class__ is Event:
                self._serve_event(record, event, next(predicted), fields)
            else:
                self._dead_letter(record, event)
        for record in {(r.topic, r.partition): r for r in records}.values():  # each one's last
            self.next_offsets[tp_key(record)] = record.offset + 1
        self.processed_this_run += len(records)
        self.since_checkpoint += len(records)

    def _swap_model(self) -> bool:
        """Swap in the newest snapshot that verifies and is newer (term, version) than the
        one in use; True when a model is in use. The others are reported and skipped (a
        replayed older one among them): the model in use stays."""
        found = self._newest_valid(self.model_reader, self.cfg.model_topic, MODEL_FIELDS)
        if found is None:
            return self.slot.manifest is not None
        manifest, _, state = found
        self.model_reader.accept(manifest)
        self.slot.adopt(state["model"], state.get("name"))
        shadow = state.get("shadow")  # the learner's --shadow: its challengers' models
        self.shadow = {n: m for n, m in shadow.items() if isinstance(n, str)
                       and hasattr(m, "predict_one")} if isinstance(shadow, dict) else {}
        if self.cfg.shadow and not self.shadow and not self.said_no_shadow:
            log.warning("--shadow: the model snapshots of %s carry no challenger's model (give "
                        "the learner --shadow and a --challenger): the prediction records have "
                        "no shadow field", self.cfg.model_topic)
            self.said_no_shadow = True
        self.slot.manifest = manifest
        self.snapshot = {k: state[k] for k in ("learned", "events", "published_at_ms")}
        # the version that made the model: a pinned one's (models/pinning.py) or this one's
        pinned = state.get("pinned")
        self.snapshot["version"] = pinned if type(pinned) is int else manifest["version"]
        log.info("model version %d/%d from %s (%s, %d events learned%s)", manifest["term"],
                 manifest["version"], self.cfg.model_topic, self.slot.name, state["learned"],
                 f"; version {pinned} pinned" if type(pinned) is int else "")
        return True

    def _shadow_models(self) -> dict:
        return self.shadow if self.cfg.shadow else {}

    def _model_fields(self) -> dict:
        return {"n_learned": self.snapshot["learned"], "model_version": self.snapshot["version"]}

    def figures(self) -> dict:
        """The report's figures, with the model in use and how stale it is: seconds since
        the learner published it (`model_age_s`), events the learner has learned since
        (`learned_since_model`, from its newest progress record) and the seconds they took
        (`stale_s`: 0 while the learner learns nothing, however old the model); both None
        while the newest progress record is not plausible (`_learned_since`)."""
        staleness = dict.fromkeys(("model_version", "model_learned", "model_age_s",
                                   "learned_since_model", "stale_s"))
        snapshot, progress = self.snapshot, self.model_reader.progress
        if snapshot is not None:
            ahead = self._learned_since(progress)
            stale_ms = progress["time_ms"] - snapshot["published_at_ms"] if ahead else 0
            staleness = {"model_version": snapshot["version"],
                         "model_learned": snapshot["learned"],
                         "model_age_s": time.time() - snapshot["published_at_ms"] / 1000,
                         "learned_since_model": ahead,
                         "stale_s": None if ahead is None else max(stale_ms, 0) / 1000}
        return {**self.stats.snapshot(0), "early_labels": 0, "pending_bytes": 0,
                "invalid_snapshots": self.invalid_snapshots, **staleness}

    def _learned_since(self, progress: dict | None) -> int | None:
        """Events learned since the model in use by `progress` (0 when it is older than the
        model), or None when it is not plausible (anyone who can write the model topic can
        write one): stamped more than `CLOCK_SKEW_S` in the future, or claiming more than
        `MAX_LEARN_RATE` events a second since the model was published (a forged record said
        1e15)."""
        if progress is None or (progress["term"], progress["version"]) < snapshots.stamp(
                self.slot.manifest):
            return 0
        ahead = max(progress["learned"] - self.snapshot["learned"], 0)
        span_ms = progress["time_ms"] - self.snapshot["published_at_ms"] + CLOCK_SKEW_S * 1000
        if (progress["time_ms"] > time.time() * 1000 + CLOCK_SKEW_S * 1000
                or ahead > MAX_LEARN_RATE * max(span_ms, 0) / 1000):
            return None
        return ahead

    def _readiness(self, assigned) -> tuple[bool, str]:
        """(ready, why not): partitions and a model (a predictor steps only once it has one)."""
        if self.slot.manifest is None:
            return False, "no model yet"
        return super()._readiness(assigned)

    def run(self) -> int:
        try:
            return super().run()
        finally:
            if hasattr(self, "model_reader"):
                self.model_reader.close()
