"""Backfill: a challenger added live (`river-pa models add NAME SPEC --backfill`) first learns
the retained history of the events and labels topics, then joins the live merge.

The learner reads both topics from their earliest retained offsets with a group-less consumer
of its own, up to the offsets its live merge has reached, in the same event-time order
(loop/ordering.py, every partition merged as the learner merges them), and trains only the new
model there: it predicts each event, is scored when the label comes (progressive validation,
as live) and learns. It takes at most twice `--max-poll-records` records a batch (twenty
times after an empty one), between the live batches, so the other models go on learning live
meanwhile; when it reaches the live
offsets it aims at the offsets live has reached since, until it meets them between two batches.
Then it joins: its predictions of the events still waiting for a label go into their pending
entries, and from then on it learns with the others. Its report (`backfilled`) gives the events
and labels it learned from the history and the offsets it started from.

Until it joins it is not part of the state: a learner restored meanwhile (a failover, an
exactly-once rollback) starts its backfill again from the beginning (``control["backfilling"]``
names it), which gives the same model as long as the topics retain the same records.

"""

from __future__ import annotations

import itertools
import logging

from river_pa.connectors.codec import BadRecord, decode_event, decode_label
from river_pa.connectors.kafka.partitions import TopicPartition, tp_key
from river_pa.connectors.loop.ordering import EventTimeOrder
from river_pa.connectors.state.pending import Pending, PendingStore

__all__ = ["Backfill", "Backfilling"]

log = logging.getLogger("river_pa.serve")

# records of the history a backfill learns per live batch, in `--max-poll-records`: above one,
# so it catches up with a live stream that fills every batch (learning one model, it is faster)
BUDGET = 2
IDLE_BUDGET = 20  # the same when live had nothing to learn (a new user's idle 40k took 38 s)
CATCH_UP_WAIT_MS = 100  # a fetch after a seek, when the rest may fit in this batch


class Backfill:
    """One challenger's catch-up on the history: its consumer, the merge, the offsets aimed at
    (`target`, a checkpoint's {"topic:partition": offset}), its own pending events and early
    labels (stores bounded like the daemon's: `new_store()`), and what it learned."""

    def __init__(self, challenger, consumer, events_topic: str, labels_topic: str,
                 partitions: list, target: dict[str, int], new_store):
        self.challenger, self.consumer = challenger, consumer
        self.partitions, self.target = partitions, dict(target)
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        self.start = {tp_key(tp): consumer.position(tp) for tp in partitions}
        self.order = EventTimeOrder(events_topic, labels_topic, self._reached,
                                    TopicPartition, assigned=lambda: set(partitions))
        self.pending = new_store()  # events: Pending(x, its prediction, timestamp)
        self.early = new_store()  # labels before their event: Pending({}, label, timestamp)
        self.counts = {"events": 0, "labels": 0, "skipped": 0, "dropped": 0}

    def _reached(self, tp) -> bool:
        return self.consumer.position(tp) >= self.target.get(tp_key(tp), 0)

    def fetch(self, wait_ms: int = 0) -> None:
        """Take what a poll returns (waiting up to `wait_ms`), up to the target offsets."""
        for tp, records in self.consumer.poll(wait_ms).items():
            end = self.target.get(tp_key(tp), 0)
            self.order.add(tp, [r for r in records if r.offset < end])

    def done(self) -> bool:
        """Whether every record up to the target offsets was learned."""
        return all(self._reached(tp) and not self.order.buffers.get(tp)
                   for tp in self.partitions)

    def aim(self, live: dict[str, int]) -> None:
        """Aim at the live offsets `live` (reached the old target: the records after it are
        fetched again)."""
        for tp in self.partitions:
            key = tp_key(tp)
            self.consumer.seek(tp, self.target.get(key, 0))
            self.target[key] = live.get(key, self.target.get(key, 0))

    def figures(self) -> dict:
        return {**self.counts, "from_offsets": self.start}

    def close(self) -> None:
        self.consumer.close()


class Backfilling:
    """The daemon's side: start, step and join the backfills (a daemon that learns)."""

    backfills: dict | None = None
    backfills_due: list | None = None  # to start again at the next batch (after a restore)

    def _start_backfill(self, name: str, challenger) -> None:
        """Start learning `challenger` on the history (it joins `self.challengers` later)."""
        self.backfills = self.backfills or {}
        topics = [self.cfg.events_topic, self.cfg.labels_topic]
        partitions = sorted((TopicPartition(t, p) for t in topics
                             for p in self.consumer.partitions_for_topic(t) or ()),
                            key=tp_key)
        cfg = self.cfg
        self.backfills[name] = Backfill(
            challenger, self.client.make_offsets_client(cfg), cfg.events_topic,
            cfg.labels_topic, partitions, self.next_offsets,
            lambda: PendingStore(cfg.pending_max, None, cfg.pending_max_bytes))
        log.info("challenger %s: backfilling from the earliest retained offsets up to %s",
                 name, self.next_offsets)

    def _restart_backfills(self) -> None:
        """Start again, at the next batch, the backfills a restored state names (they were not
        part of it; a restore runs before the daemon's consumer knows its topics: a learner
        restarted mid-backfill failed on every start, in a new user's try)."""
        self.backfills_due = list(self.control["backfilling"])

    def _start_due_backfills(self) -> None:
        for name in self.backfills_due or ():
            found = self._live_challenger(name, self.control["models"].get(name) or "")
            if isinstance(found, str):
                log.warning("challenger %s: its backfill not started again: %s", name, found)
            else:
                self._start_backfill(name, found)
        self.backfills_due = None

    def _stop_backfills(self, names=None) -> None:
        """Close the backfills of `names` (None: all), e.g. before a restore starts them again."""
        if names is None:
            self.backfills_due = None
        for name in list(self.backfills or ()) if names is None else names:
            backfill = (self.backfills or {}).pop(name, None)
            if backfill is not None:
                backfill.close()

    def _step_backfills(self, idle: bool = False) -> None:
        """Let each backfill learn up to `BUDGET` times `--max-poll-records` records of the
        history (`IDLE_BUDGET` times when live was `idle`: its batch was empty); join the
        ones that met the live offsets."""
        self._start_due_backfills()
        for name, backfill in list((self.backfills or {}).items()):
            budget = (IDLE_BUDGET if idle else BUDGET) * self.cfg.max_poll_records
            wait_ms = 0
            while True:
                backfill.fetch(wait_ms)
                for record in itertools.islice(backfill.order.ready(), budget):
                    self._backfill_record(backfill, record)
                    budget -= 1
                if not backfill.done():
                    break  # more at the next batch
                if backfill.target == {k: self.next_offsets.get(k, v)
                                       for k, v in backfill.target.items()}:
                    self._join(name, backfill)
                    break
                backfill.aim(self.next_offsets)  # what live learned meanwhile: in this batch
                wait_ms = CATCH_UP_WAIT_MS       # while the budget lasts (a seek fetches anew)
                if budget <= 0:
                    break

    def _backfill_record(self, backfill: Backfill, record) -> None:
        """Predict, score and learn one record of the history with the backfilled model only
        (as `Records` does live)."""
        challenger, check = backfill.challenger, self.slot.check_label
        if self.order.labels_topic is None:  # nothing to learn from
            return
        try:
            if record.topic == self.cfg.events_topic:
                event = decode_event(record.value, check, self.cfg.max_record_bytes)
            else:
                label = decode_label(record.value, check, self.cfg.max_record_bytes)
        except BadRecord:
            backfill.counts["skipped"] += 1  # dead-lettered live already
            return
        if record.topic == self.cfg.events_topic:
            backfill.counts["events"] += 1
            y_pred, y = challenger.predict(event.x), event.y
            if y is None:
                early = backfill.early.pop(event.id)
                if early is None:
                    dropped = backfill.pending.add(event.id, Pending(event.x, y_pred,
                                                                     record.timestamp))
                    backfill.counts["dropped"] += len(dropped)
                    return
                y = early.y_pred  # its label came first: learned now
            self._backfill_learn(backfill, event.x, y, y_pred, None)
        elif (entry := backfill.pending.pop(label.id)) is not None:
            self._backfill_learn(backfill, entry.x, label.y, entry.y_pred,
                                 record.timestamp - entry.ts)
        else:
            backfill.early.add(label.id, Pending({}, label.y, record.timestamp))

    def _backfill_learn(self, backfill: Backfill, x, y, y_pred, delay_ms) -> None:
        challenger = backfill.challenger
        # its metrics only: the served model predicted none of the history, so no test against
        # it (an absent prediction counted as wrong made any backfilled model "beat" it, and
        # --auto-promote promote it, in a new user's try)
        if change := challenger.stats.score(y, y_pred, delay_ms):
            self._changed(change, challenger.stats, challenger.slot, challenger.name)
        challenger.learn(x, y)
        backfill.counts["labels"] += 1

    def _join(self, name: str, backfill: Backfill) -> None:
        """The backfilled model joins the live merge: its predictions of the pending events
        are theirs."""
        for rid, entry in self.pending.items():
            if (mine := backfill.pending.pop(rid)) is not None:
                entry.others = {**(entry.others or {}), name: mine.y_pred}
        backfill.challenger.backfilled = backfill.figures()
        self.challengers[name] = backfill.challenger
        self.control["backfilling"].remove(name)
        self._stop_backfills([name])
        self.since_checkpoint = max(self.since_checkpoint, 1)
        log.warning("challenger %s joined the live models after backfilling %d events and %d "
                    "labels (from offsets %s)", name, backfill.counts["events"],
                    backfill.counts["labels"], backfill.start)
