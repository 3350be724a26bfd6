"""The consume-predict-emit-learn loop of `river-pa serve`.

A record's path: bytes -> decode and validate (or dead-letter) -> predict -> prediction record
-> learn now (event with y) or keep in the pending store until the label arrives -> metrics ->
checkpoint -> commit. Offsets move only for processed records and are committed (or sent in
the transaction) only after the checkpoint that covers them is on disk.

"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sys
import threading
import time
from functools import partial
from pathlib import Path

from river import base

from river_pa.connectors.state import checkpoint, snapshots
from river_pa.connectors.codec import (
    BadRecord, TooManyClassesError, decode_event, decode_label, encode_json, label_check_for,
)
from river_pa.connectors.config import ServeConfig
from river_pa.connectors.errors import ModelError, OutputTooLarge
from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.client import (
    RebalanceQueue, TopicPartition, close_producer, ensure_topic, group_size, make_consumer, make_offsets_client, make_producer,
    offsets_to_commit, poll, quiet_bootstrap, tp_key, transact, unreachable,
)
from river_pa.connectors.kafka.outputs import Outputs, topic_limits
from river_pa.connectors.loop.ordering import EventTimeOrder
from river_pa.connectors.observe.metrics import Health
from river_pa.connectors.observe.reporting import Reporter, Stats, serve_metrics
from river_pa.connectors.state.pending import Pending, PendingStore
from river_pa._core.validation import TooManyFeaturesError

__all__ = ["Daemon", "ModelError", "watch_stop"]

log = logging.getLogger("river_pa.serve")


MODEL_FAILURES_TO_STOP = 100
# what a snapshot of the state topic and of the model topic hold (besides the model)
STATE_FIELDS = {"stats": Stats, "pending": PendingStore, "early": PendingStore, "offsets": dict}
MODEL_FIELDS = {"learned": int, "events": int, "published_at_ms": int}
PROGRESS_SECONDS = 1.0  # the learner publishes its progress at most this often
STOP_GRACE_S = 3.0  # after a stop signal, how long before a daemon without a broker exits


def check_model(model) -> None:
    """Predict, then learn, one synthetic event on a clone of `model` (never the served one).

    A binary classifier learns ``True``, a regressor ``0.5``; other models only predict.
    ValueError naming the model and the error if it raises (e.g. a River optimizer given as
    a string, which fails only in `learn_one`).
    """
    clone, x = model.clone(), {"river_pa_check": 1.0}
    try:
        if hasattr(clone, "predict_proba_one"):
            clone.predict_proba_one(x)
        elif hasattr(clone, "predict_one"):
            clone.predict_one(x)
        if isinstance(clone, base.Regressor):
            clone.learn_one(x, 0.5)
        elif isinstance(clone, base.Classifier) and not clone._multiclass:
            clone.learn_one(x, True)
    except Exception as exc:
        line = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise ValueError(f"model {type(model).__name__} fails on a synthetic event {x}: {line}") from None


def watch_stop(cfg: ServeConfig) -> None:
    """Call at a stop signal: once the stop has taken `STOP_GRACE_S`, a daemon thread exits
    the process with status 1 (no final checkpoint) when no broker of `cfg` accepts a
    connection: the last flush, commit and close would wait for one for minutes (a restart
    resumes from the last checkpoint, as after SIGKILL). While a broker is reachable the stop
    goes on (a large final checkpoint takes its time)."""
    def watch():
        time.sleep(STOP_GRACE_S)
        while not (gone := unreachable(cfg, timeout_s=1.0)):
            time.sleep(1.0)
        sys.stderr.write(f"river-pa serve: stopped without a final checkpoint: {gone} (the "
                         "records since the last one are served again at the next start)\n")
        sys.stderr.flush()
        os._exit(1)

    threading.Thread(target=watch, name="river-pa-stop", daemon=True).start()


class Daemon:
    """One serving process: a consumer, a producer, a model and its bookkeeping."""

    local_checkpoint_wins = True  # over the state topic's copy (the learner: the topic wins)

    def __init__(self, cfg: ServeConfig, model):
        self.cfg = cfg
        self.key = cfg.checkpoint_key.encode() if cfg.checkpoint_key else None
        self.fresh_meta = checkpoint.metadata(model)
        checkpoint.trust(model)  # its own classes load (e.g. a --model outside river-pa)
        self.pristine = model.clone()
        self._reset_state()
        self.check_label = label_check_for(model)
        self.model_name = type(model).__name__
        self.is_classifier = hasattr(model, "predict_proba_one")
        self.label_from_proba = type(model).predict_one is base.Classifier.predict_one
        self.stopping = False
        self.model_failures = 0  # consecutive records the model raised on
        self.processed_this_run = 0
        self.events_this_run = 0
        self.positions_unknown = False
        self.from_state: set[str] = set()  # partitions not positioned since the state's restore
        self.floors: dict[TopicPartition, int] = {}  # see `_resume_offset`
        self.unassigned_since: float | None = None
        self.since_checkpoint = 0
        self.last_checkpoint = time.monotonic()
        self.buffered_upto: dict[TopicPartition, int] = {}
        self.backlog = False
        self.log_ends: dict[TopicPartition, int] = {}
        self.state_name = f"{cfg.group_id}.{cfg.client_id}"
        self.term = 1  # of this writer of snapshots: above every term found at start
        self.state_publisher: snapshots.Publisher | None = None  # with a state topic
        self.model_publisher: snapshots.Publisher | None = None  # the learner's
        self.model_manifest: dict | None = None  # of the newest model in the model topic
        self.invalid_snapshots = 0  # records of the state and model topics not valid, skipped
        self.last_publish = time.monotonic()
        self.events_at_publish = self.learned_at_publish = 0
        self.progress_at, self.learned_at_progress = time.monotonic(), 0
        self.health = Health()

    # ---- state -------------------------------------------------------------------------

    def _reset_state(self) -> None:
        """The state of a daemon that has seen nothing."""
        self.model = self.pristine.clone()
        self.stats = Stats(serve_metrics(self.cfg.metric, self.model), self.cfg.rolling_window)
        self.pending = PendingStore(self.cfg.pending_max, self.cfg.pending_ttl_ms,
                                    self.cfg.pending_max_bytes)
        self.early = PendingStore(self.cfg.pending_max, self.cfg.pending_ttl_ms,
                                  self.cfg.pending_max_bytes)
        self.next_offsets: dict[str, int] = {}

    def _state(self) -> dict:
        return {"model": self.model, "stats": self.stats, "pending": self.pending,
                "early": self.early, "offsets": dict(self.next_offsets)}

    def _restore(self, state: dict) -> None:
        self.model = state["model"]
        self.stats = state["stats"]
        self.pending = state["pending"]
        self.early = state.get("early", self.early)  # checkpoints written before early labels
        self.next_offsets = dict(state["offsets"])
        self._apply_settings()

    def _apply_settings(self) -> None:
        """Apply this start's bounds and metrics to a restored state (they were ignored): the
        pending entries and early labels beyond the bounds are evicted now (counted as expired
        and orphan labels), entries older than a new TTL at the next event. Another `--metric`
        or `--rolling-window` restarts the metrics from zero, said in one line: they observe
        the model, which is kept, and refusing would leave a new group (relearning everything)
        as the only way to change a dashboard."""
        cfg = self.cfg
        expired = self.pending.bound(cfg.pending_max, cfg.pending_ttl_ms, cfg.pending_max_bytes)
        orphans = self.early.bound(cfg.pending_max, cfg.pending_ttl_ms, cfg.pending_max_bytes)
        self._count_expired(expired)
        self._count_orphans(orphans)
        if expired or orphans:
            log.info("the restored state was over --pending-max/--pending-max-bytes: %d pending "
                     "events expired, %d early labels orphaned", len(expired), len(orphans))
        old = [type(m).__name__ for m in self.stats.metric], self.stats.rolling.window_size
        if self.stats.use_metrics(serve_metrics(cfg.metric, self.model), cfg.rolling_window):
            log.info("metrics %s (window %d) restart from zero as %s (window %d): counts and "
                     "the model are kept", *old, [type(m).__name__ for m in self.stats.metric],
                     cfg.rolling_window)

    def _checkpoint_to_load(self, consumer) -> Path | None:
        """The newest checkpoint, or with exactly-once the one matching committed offsets."""
        path = Path(self.cfg.checkpoint_path)
        if not path.exists():
            return None
        if not self.cfg.exactly_once:
            return path
        committed = {}
        for candidate in (path, path.with_name(path.name + ".prev")):
            if candidate.exists() and self._covered_by_committed(consumer, candidate, committed):
                return candidate
        if not any(v is not None for v in committed.values()):
            log.info("nothing committed yet for %s", sorted(committed))
            return None  # the first transaction never committed: start afresh
        raise checkpoint.CheckpointError(
            f"{path}: neither it nor its .prev matches the offsets committed in Kafka")

    @staticmethod
    def _covered_by_committed(consumer, path: Path, committed: dict) -> bool:
        """True when no offset of the checkpoint is ahead of Kafka's committed offsets.

        A checkpoint ahead of them was written for a transaction that never committed. Offsets
        behind them belong to partitions another daemon has advanced since. Fills `committed`.
        """
        for key, offset in checkpoint.read_header(path)["offsets"].items():
            if key not in committed:
                topic, _, partition = key.rpartition(":")
                committed[key] = consumer.committed(TopicPartition(topic, int(partition)))
            if committed[key] is None or offset > committed[key]:
                return False
        return True

    def load(self, consumer) -> None:
        """Restore the state from the checkpoint, if there is one (else start afresh)."""
        self._reset_state()
        path = self._checkpoint_to_load(consumer)
        if path is None:
            log.info("no checkpoint to load from %s: starting afresh", self.cfg.checkpoint_path)
        else:
            self._restore(checkpoint.load(path, self.fresh_meta, self.key))
            log.info("restored %s: %d events, offsets %s", path, self.stats.counts["events"],
                     self.next_offsets)

    def _restore_from_state_topic(self) -> None:
        """Read the state topic (created, compacted, replicated up to 3 times, if missing) and
        write the newest copy of the checkpoint that verifies where the checkpoint goes when
        there is none there (a new node), so `load` loads it like any checkpoint. This
        daemon's term follows the newest one there, and its versions too."""
        cfg = self.cfg
        reader = self._snapshot_reader(cfg.state_topic, self.state_name)
        try:
            self.term = max(self.term, reader.newest[0] + 1)
            self.state_publisher = snapshots.Publisher(cfg.state_topic, self.state_name, self.term,
                                                       reader.newest[1], reader.manifests())
            path = Path(cfg.checkpoint_path)
            if path.exists() and self.local_checkpoint_wins:
                return  # the local file is at least as new: written before its copy was sent
            # another --model's state, signed with our key (or unsigned, with no key): exit 3
            found = self._newest_valid(reader, cfg.state_topic, STATE_FIELDS,
                                       fatal=checkpoint.VersionMismatch)
        finally:
            reader.consumer.close()
        if found is None:
            return
        manifest, payload, _ = found
        tmp = path.with_name(path.name + ".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
        log.info("%s: restored version %d/%d (%d bytes) from %s",
                 "no local checkpoint" if self.local_checkpoint_wins else "the group's state",
                 manifest["term"], manifest["version"], len(payload), cfg.state_topic)

    def _newest_valid(self, reader: snapshots.Reader, topic: str, fields: dict, fatal=()):
        """(manifest, payload, state) of the newest version in `reader` that verifies like a
        checkpoint (its signed header naming its term and version) and holds a dict with
        `fields` (name -> type; "model" always, of the configured model's class), or None;
        each one that does not is reported and dropped (errors of the types `fatal` raise)."""
        fields = {"model": type(self.pristine), **fields}
        for manifest, payload in reader.candidates():
            try:
                stamp = {"term": manifest["term"], "version": manifest["version"]}
                _, state = checkpoint.loads(payload, self.fresh_meta, self.key, "its payload",
                                            stamp)
            except fatal:
                raise
            except checkpoint.CheckpointError as exc:
                reader.reject(manifest, str(exc))
                continue
            wrong = [k for k, t in fields.items() if not isinstance(
                state.get(k) if isinstance(state, dict) else None, t)]
            if wrong:
                reader.reject(manifest, f"its payload lacks or mistypes {wrong[0]!r}")
                continue
            return manifest, payload, state
        return None

    def _invalid_snapshot(self, reason: str) -> None:
        """One line and one count for a record of the state or model topic that is skipped."""
        log.warning("invalid snapshot record skipped: %s", reason)
        self.invalid_snapshots += 1

    # ---- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; return the exit status."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        cfg = self.cfg
        self.output_topics = [t for t in (cfg.predictions_topic, cfg.dead_letter_topic,
                                          cfg.metrics_topic) if t]
        with quiet_bootstrap():  # a broker that refuses us is one line, not the client's log
            self.consumer = make_consumer(cfg)
            limits = topic_limits(cfg, self.output_topics)
            self.producer = make_producer(cfg, limits)
            # end offsets, for the merge (`_log_end`): two topics, or the learner's partitions
            merges = cfg.labels_topic or cfg.role == "learn"
            self.offsets_client = make_offsets_client(cfg) if merges else None
        self.outputs = Outputs(self.producer, cfg.dead_letter_topic, limits)
        if cfg.exactly_once:  # first: fences a killed predecessor and aborts its transaction
            self.producer.init_transactions()
            self.producer.begin_transaction()
        self._start()
        self.rebalances = RebalanceQueue()
        labels = cfg.labels_topic if cfg.role != "predict" else None
        self.topics = [cfg.events_topic] + ([labels] if labels else [])
        self._subscribe()
        self.order = EventTimeOrder(cfg.events_topic, labels, self._exhausted, TopicPartition,
                                    self.consumer.assignment if cfg.role == "learn" else None)
        self.reporter = Reporter(cfg.report_every, cfg.report_seconds, cfg.report_path,
                                 self._send_report)
        self.health.beat = time.monotonic()  # a first step that never ends turns /livez 503
        try:
            while not self.stopping:
                self._step()
            self._final_checkpoint()
        except BaseException:  # no checkpoint; a restart recovers from the last one
            self._close_clients(flush=False)
            raise
        self._close_clients(flush=True)
        return 0

    def _close_clients(self, flush: bool) -> None:
        """Close the clients, the producer after its last sends if `flush` (else at once:
        after an error nothing unsent is needed, and it may wait for a broker that is away).
        An error closing one is logged: it must not replace the error that ended the run (a
        lost lease would become an exit 1), and after a clean stop the final checkpoint is
        already written."""
        closes = [partial(close_producer, self.producer, None if flush else 0),
                  partial(self.consumer.close, autocommit=False)]
        if self.offsets_client is not None:
            closes.append(self.offsets_client.close)
        for close in closes:
            try:
                close()
            except errors.ClientError as exc:
                log.warning("closing a Kafka client: %s", exc)

    def _subscribe(self) -> None:
        """Join the consumer group on the input topics (the learner assigns itself instead)."""
        self.consumer.subscribe(self.topics, listener=self.rebalances)

    def _start(self) -> None:
        """Restore the state (from the state topic on a new node, then the checkpoint)."""
        if self.cfg.state_topic:
            self._restore_from_state_topic()
        self.load(self.consumer)
        self.from_state = set(self.next_offsets)

    def _snapshot_reader(self, topic: str, name: str) -> snapshots.Reader:
        """A reader of snapshot `name` that has read `topic` to its end (the topic is created,
        compacted, replicated up to 3 times, if it is missing); the caller closes it."""
        ensure_topic(self.cfg, topic)
        reader = snapshots.Reader(make_offsets_client(self.cfg), topic, name,
                                  self._invalid_snapshot)
        reader.read_to_end(120)
        return reader

    def _on_signal(self, signum, frame) -> None:
        log.info("signal %d: finishing the current batch", signum)
        if not self.stopping:
            watch_stop(self.cfg)
        self.stopping = True

    def _step(self) -> None:
        """Poll (without waiting while ready records remain), then process one bounded batch."""
        timeout = 0 if self.backlog else self.cfg.poll_timeout_ms
        polled = poll(self.consumer, timeout)
        self.log_ends.clear()
        revoked, reassigned = self.rebalances.take()
        if revoked and self.cfg.exactly_once and self.since_checkpoint:
            # their records are in the open transaction, their offsets can no longer be
            # committed by us: abort, the new owner processes them again
            self._rollback("partitions were revoked during the transaction")
            return  # what was polled predates the rollback's seeks
        if revoked or reassigned or self.positions_unknown:
            self._resume()
            return  # what was polled predates the seeks
        assigned = self.consumer.assignment()
        self._beat(assigned)
        self._check_membership(assigned)
        for tp, records in polled.items():
            if tp in assigned:  # not fetched before a revocation
                self._buffer(tp, records)
        batch, deadline = 0, time.monotonic() + self.cfg.batch_seconds
        for record in itertools.islice(self.order.ready(), self.cfg.max_poll_records):
            self._process(record)
            batch += 1
            if time.monotonic() > deadline:  # a slow model: poll again well inside
                break                        # max.poll.interval.ms
        self.backlog = batch > 0 and (batch == self.cfg.max_poll_records
                                      or time.monotonic() > deadline)
        self._flow_control()
        if self.cfg.role == "learn":
            self._publish()
        if self.reporter.due(self.stats.counts["events"]):
            self._report()
        if self._checkpoint_due():
            self._checkpoint_or_rollback()

    def _checkpoint_or_rollback(self) -> None:
        """Checkpoint and commit; with exactly-once, a failed transaction (a rebalance moved
        partitions meanwhile) is aborted and the state rolled back to the last checkpoint.
        A batch refused as too large (a topic's limit lowered while serving) rolls back in
        either mode, with a producer sized for the limits read again."""
        group = None
        if self.cfg.exactly_once:
            group = self.consumer.group_metadata()  # the broker fences it if a rebalance follows
            if self.rebalances.pending():  # a rebalance before it: see _step
                return self._rollback("partitions were revoked during the transaction")
        try:
            self.checkpoint_and_commit(group=group)
        except OutputTooLarge as exc:
            self._rollback(exc)
        except errors.ClientError as exc:
            if not self.cfg.exactly_once or isinstance(exc, errors.ProducerFenced):
                raise  # at least once: nothing committed past it; fenced: another owns our id
            if self.stopping and isinstance(exc, errors.ClientTimeout):
                # a stop does not wait for a new producer (its init_transactions waits as long
                # again): the next start serves again what the open transaction held (the
                # fault harness's seed 136: a predictor still running 60 s after SIGTERM)
                raise errors.ClientTimeout(f"stopped without a final checkpoint: {exc} (the "
                                        "records since the last one are served again at the "
                                        "next start)") from exc
            self._rollback(exc)

    def _rollback(self, why) -> None:
        """Abort the transaction (or replace the producer, see `_replace_producer`); restore
        the last checkpoint; seek to the committed offsets (at least once: the checkpoint's)."""
        log.warning("rolling back %s: %s", "the open transaction" if self.cfg.exactly_once
                    else "to the last checkpoint", why)
        if isinstance(why, (errors.ClientTimeout, OutputTooLarge)):  # a call did not end (so
            self._replace_producer(why)                          # would the abort), or limits
        elif self.cfg.exactly_once:
            try:
                transact(self.producer, "abort_transaction")
                self.outputs.forget_aborted()
            except errors.ClientTimeout as exc:
                self._replace_producer(exc)
        if self.cfg.exactly_once:
            self.producer.begin_transaction()
        self.order.drop(list(self.order.buffers))
        self.buffered_upto.clear()
        events = self.stats.counts["events"]
        self.load(self.consumer)
        self.events_this_run -= events - self.stats.counts["events"]  # served again
        for tp in self.consumer.assignment():
            self._seek(tp, self._resume_offset(tp, self.consumer.committed(tp)))
        self.since_checkpoint = 0

    def _replace_producer(self, why) -> None:
        """Replace the producer by a new one sized for the output topics' limits read again.

        With exactly-once (a transactional call that did not end, see `kafka.client.transact`) it
        has the same transactional id: its `init_transactions` fences the old one and ends the
        open transaction at the coordinator (aborted, or committed if the commit had reached
        it; `load` then picks the checkpoint that matches the committed offsets). The old
        producer is closed on a thread of its own: its sends fail once it is fenced."""
        log.warning("replacing the producer: %s", why)
        old = self.producer
        limits = topic_limits(self.cfg, self.output_topics)
        with quiet_bootstrap():
            self.producer = make_producer(self.cfg, limits)
        self.outputs.replace(self.producer, limits)
        if self.cfg.exactly_once:
            self.producer.init_transactions()  # bounded by max_block_ms: errors.ClientTimeout
        threading.Thread(target=close_producer, args=(old,), name="river-pa-old-producer",
                         daemon=True).start()

    def _resume(self) -> None:
        """After a rebalance (and at start), seek every partition this member owns to where
        its processing stopped (`_resume_offset`).

        Buffered records are dropped and fetched again: kafka-python keeps the fetch position
        of a partition the member keeps, past those records, which were lost for good.
        """
        self.order.drop(list(self.order.buffers))
        self.buffered_upto.clear()
        self.positions_unknown = False
        committed = {}
        for tp in self.consumer.assignment():
            try:
                committed[tp] = self.consumer.committed(tp)
            except errors.ClientError as exc:  # the coordinator is away: try again after the next poll
                log.warning("committed offset of %s unknown (%s)", tp, exc)
                self.positions_unknown = True
                return
        self._check_state(committed)
        for tp, offset in committed.items():
            self._seek(tp, self._resume_offset(tp, offset))

    def _resume_offset(self, tp: TopicPartition, committed: int | None) -> int | None:
        """Where `tp` resumes given the group's `committed` offset (None: where
        `auto_offset_reset` says).

        A model learned from this daemon's own state resumes where that state stopped, also
        when it is older than `committed` (an older snapshot or checkpoint restored): the
        learner always, `--role both` for a partition not positioned since its state was
        restored at start (`from_state`). The records in between are learned again; their
        outputs (predictions, dead letters) were sent before and are not sent again, and the
        offsets committed never go below `committed` meanwhile (`floors`), so a crash during
        the catch-up does not forget where they end. A partition the state has no offset for
        starts, for the learner, where `auto_offset_reset` says (the state never learned it),
        for a member of a group at `committed`. Otherwise (a predictor, a member after a
        rebalance) a partition another member moved further than this one's position resumes
        at `committed`: that member served and learned them, and committing the older offset
        would move the group's backwards.
        """
        key, learner = tp_key(tp), self.cfg.role == "learn"
        mine, floor = self.next_offsets.get(key), self.floors.pop(tp, None)
        if committed is None or (mine is not None and mine >= committed):
            return mine
        relearn = learner or key in self.from_state or committed == floor  # (our own floor)
        self.from_state.discard(key)
        if not relearn or (mine is None and not learner):
            self.next_offsets[key] = committed
            return committed
        self.floors[tp] = committed
        return mine

    def _check_state(self, committed: dict) -> None:
        """Refuse to start a learner with no state whose group has `committed` offsets (the
        state topic emptied or deleted): its model would start empty at the committed offsets
        and never learn what lies before them. `allow_empty_state` accepts it; the learner
        then relearns from where `auto_offset_reset` says (earliest: all the topics retain),
        not from the committed offsets, which would leave the model without the past."""
        if self.cfg.role != "learn" or self.next_offsets or self.cfg.allow_empty_state:
            return
        ahead = sorted(f"{tp.topic}:{tp.partition}@{o}" for tp, o in committed.items() if o is not None)
        if ahead:
            raise checkpoint.CheckpointError(
                f"no state to restore (none in {self.cfg.state_topic} under {self.state_name}, "
                f"no checkpoint at {self.cfg.checkpoint_path}) but group {self.cfg.group_id} has "
                f"committed offsets ({', '.join(ahead[:3])}{', ...' if len(ahead) > 3 else ''}): "
                "the model would start empty and never learn the records before them; restore "
                "the state, or pass --allow-empty-state to relearn from --auto-offset-reset "
                f"({self.cfg.auto_offset_reset})")

    def _replayed(self, record) -> bool:
        """True for a record below the floor of its partition (relearned, its outputs sent)."""
        floor = self.floors.get(TopicPartition(record.topic, record.partition))
        return floor is not None and record.offset < floor

    def _seek(self, tp: TopicPartition, offset: int | None) -> None:
        """Seek to `offset`, or where `auto_offset_reset` says when it is None.

        A partition revoked meanwhile is skipped (the rebalance runs on the client's IO thread,
        so it can land between two calls of this loop; the seek raised ValueError and the
        daemon died): the `_resume` after the next poll sets the positions of the new
        assignment.
        """
        try:
            if offset is not None:
                self.consumer.seek(tp, offset)
            elif self.cfg.auto_offset_reset == "latest":
                self.consumer.seek_to_end(tp)
            else:
                self.consumer.seek_to_beginning(tp)
        except (ValueError, errors.IllegalState):
            log.info("%s was revoked before it could be sought", tp)

    def _beat(self, assigned) -> None:
        """Tell the health endpoints that the loop steps, whether it is ready and, once a
        second, each partition's lag: the high watermark of its last fetch minus the next
        offset to process (both known locally: no request)."""
        health = self.health
        health.beat = time.monotonic()
        health.ready, health.why = self._readiness(assigned)
        if health.beat - health.lag_at < 1.0:
            return
        health.lag_at, lag = health.beat, {}
        for tp in assigned:
            high, done = self.consumer.highwater(tp), self.next_offsets.get(tp_key(tp))
            if high is not None and done is not None:
                lag[(tp.topic, tp.partition)] = max(high - done, 0)
        health.lag = lag

    def _readiness(self, assigned) -> tuple[bool, str]:
        """(ready, why not): a member is ready once it has partitions."""
        return (True, "ok") if assigned else (False, "no partition assigned")

    def _check_membership(self, assigned) -> None:
        """Rejoin when no partition came for a while although the topics have more partitions
        than the group has members (seen after starting before the topics existed: the
        member sat with nothing for minutes, without a word)."""
        if assigned:
            self.unassigned_since = None
            return
        now = time.monotonic()
        if self.unassigned_since is None:
            self.unassigned_since = now
        wait_s = max(10.0, 3 * self.cfg.session_timeout_ms / 1000)
        if now - self.unassigned_since < wait_s:
            return
        self.unassigned_since = now
        try:  # a metadata request (kafka-python 3.0.12 raises if its broker is away)
            partitions = len(self.consumer.partitions_for_topic(self.cfg.events_topic) or ())
        except errors.ClientError as exc:
            log.warning("partitions of %s unknown (%s)", self.cfg.events_topic, exc)
            return
        members = group_size(self.cfg)
        # also with no member at all: a first join that never completed (seen under load:
        # with the rejoin skipped for that case, daemons sat for 2 minutes with nothing)
        if partitions > members:
            log.warning("no partition assigned for %.0f s although %s has %d partitions and the "
                        "group %d members: rejoining", wait_s,
                        self.cfg.events_topic, partitions, members)
            self.consumer.unsubscribe()
            self.consumer.subscribe(self.topics, listener=self.rebalances)

    def _buffer(self, tp: TopicPartition, records: list) -> None:
        """Buffer records not processed yet; records below our position are replays."""
        start = max(self.next_offsets.get(tp_key(tp), 0), self.buffered_upto.get(tp, 0))
        fresh = [r for r in records if r.offset >= start]
        if fresh:
            self.order.add(tp, fresh)
            self.buffered_upto[tp] = fresh[-1].offset + 1
        elif records and records[-1].offset + 1 < start:
            self._seek(tp, start)

    def _exhausted(self, tp: TopicPartition) -> bool:
        """True when every record of `tp` up to the broker's end offset has been buffered."""
        try:  # errors.IllegalState: revoked meanwhile (see _seek)
            highwater = self.consumer.highwater(tp)
            known = self.buffered_upto.get(tp, self.next_offsets.get(tp_key(tp)))
            if known is None:
                known = self.consumer.position(tp, timeout_ms=1000)
        except errors.IllegalState:
            return True
        except errors.BrokerAway:  # no broker (kafka-python's lookup of the group
            return False              # coordinator, see kafka.client.poll): hold the other back
        if known is None or (highwater is not None and known < highwater):
            return False
        # The high watermark is the one of the last fetch of `tp`, which can be far behind
        # while the other partition keeps being fetched: with a live producer, labels were
        # released before their events (orphans, lost once committed). It stays unknown for
        # a partition that never had a record (labels waited for ever). Ask the broker.
        return known >= self._log_end(tp)

    def _log_end(self, tp: TopicPartition) -> int:
        """The broker's end offset of `tp`, asked at most once per poll (2**63: unknown).

        The first question of a poll asks for every assigned partition in one request: one
        round trip per partition took an eighth of the learner's time on 2 x 6 partitions.
        """
        if tp not in self.log_ends:
            wanted = {tp, *self.consumer.assignment()}.difference(self.log_ends)
            try:
                self.log_ends.update(self.offsets_client.end_offsets(list(wanted)))
            # the broker is away: hold the other side back. KeyError: kafka-python 3.0.12's
            # end_offsets when a partition got no answer (its leader restarting; it indexes
            # the answers by every partition asked: the learner died in a rolling restart)
            except (errors.ClientError, KeyError) as exc:
                log.warning("end offset of %s unknown (%s: %s)", tp, type(exc).__name__, exc)
                self.log_ends[tp] = 2**63
        return self.log_ends[tp]

    def _flow_control(self) -> None:
        """Bound the merge buffers: drop the newest records beyond the limit and seek back
        to them, so they are fetched again once the other side has caught up (pause/resume
        left a partition unfetched for good with kafka-python 3.0.12)."""
        for tp in list(self.buffered_upto):
            first_dropped = self.order.truncate(tp, self.cfg.max_buffered)
            if first_dropped is not None:
                self.buffered_upto[tp] = first_dropped
                self._seek(tp, first_dropped)

    # ---- one record ----------------------------------------------------------------------

    def _process(self, record) -> None:
        if record.topic == self.cfg.events_topic:
            self._on_event(record)
        else:
            self._on_label(record)
        self.next_offsets[tp_key(record)] = record.offset + 1
        self.processed_this_run += 1
        self.since_checkpoint += 1

    def _on_event(self, record) -> None:
        try:
            event = decode_event(record.value, self.check_label, self.cfg.max_record_bytes)
        except BadRecord as exc:
            return self._dead_letter(record, exc)
        self.stats.counts["events"] += 1
        self.events_this_run += 1
        try:
            y_pred, proba = self._predict(event.x)
        except Exception as exc:  # a model that raises on one event must not stop the daemon
            return self._model_error(record, exc)
        self._emit(record, event, y_pred, proba)
        self._after_prediction(record, event, y_pred, proba)

    def _after_prediction(self, record, event, y_pred, proba) -> None:
        """Learn the event now (its label came with it or before it) or keep it pending."""
        now = self.pending.clock(record.timestamp)
        self._count_expired(self.pending.expire(now))
        self._count_orphans(self.early.expire(now))
        scored = proba if self.stats.uses_proba else y_pred
        y = event.y
        if y is None:
            early = self.early.pop(event.id)
            if early is None:
                entry = Pending(event.x, scored, now)
                self._count_expired(self.pending.add(event.id, entry))
                self.model_failures = 0
                return
            y = early.y_pred  # its label came first: scored and learned now
        self.stats.score(y, scored, None)  # delay statistics are for late labels
        self._learn(record, event.x, y)

    def _on_label(self, record) -> None:
        try:
            label = decode_label(record.value, self.check_label, self.cfg.max_record_bytes)
        except BadRecord as exc:
            return self._dead_letter(record, exc)
        entry = self.pending.pop(label.id)
        if entry is None:  # its event has not come (yet): kept, bounded like pending events
            early = Pending({}, label.y, self.early.clock(record.timestamp))
            self._count_orphans(self.early.add(label.id, early))  # y_pred holds the label
            return
        self.stats.score(label.y, entry.y_pred, record.timestamp - entry.ts)
        self._learn(record, entry.x, label.y)

    def _predict(self, x: dict):
        if not self.is_classifier:
            return self.model.predict_one(x), None
        if self.cfg.role == "learn" and not self.stats.uses_proba:
            # the learner emits nothing and its metric scores labels: no probabilities (a
            # fifth of its per-event prediction and conversion cost)
            return self.model.predict_one(x), None
        # floats always: River's sigmoid gives the int 0 or 1 beyond |m| > 30
        proba = {k: float(p) for k, p in self.model.predict_proba_one(x).items()}
        if self.label_from_proba:  # what River's Classifier.predict_one does, without a 2nd pass
            return (max(proba, key=proba.get) if proba else None), proba
        return self.model.predict_one(x), proba

    def _learn(self, record, x: dict, y) -> None:
        try:
            self.model.learn_one(x, y)
        except TooManyClassesError as exc:  # whoever writes labels would control our memory
            self._dead_letter(record, BadRecord("too_many_classes", str(exc)))
            return
        except TooManyFeaturesError as exc:  # whoever writes events, likewise
            self._dead_letter(record, BadRecord("too_many_features", str(exc)))
            return
        except (ValueError, TypeError) as exc:  # a label the checks let through
            self._dead_letter(record, BadRecord("label_rejected", f"{type(exc).__name__}: {exc}"))
            return
        except Exception as exc:  # a broken model (e.g. a bad parameter only used by learn_one)
            return self._model_error(record, exc)
        self.model_failures = 0
        self.stats.counts["learned"] += 1

    def _model_error(self, record, exc: Exception) -> None:
        """Dead-letter `record` as ``model_error``; stop after `MODEL_FAILURES_TO_STOP` records in
        a row ended in one (a record served without error resets the count)."""
        text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        self._dead_letter(record, BadRecord("model_error", text))
        self.model_failures += 1
        if self.model_failures >= MODEL_FAILURES_TO_STOP:  # raised before any checkpoint or commit
            raise ModelError(f"model {self.model_name} failed on {self.model_failures} records in "
                             f"a row (last: {text}); stopped without a checkpoint: the records "
                             "since the last one are served again at the next start")

    def _count_expired(self, entries: list) -> None:
        self.stats.counts["expired"] += len(entries)

    def _count_orphans(self, labels: list) -> None:
        self.stats.counts["orphan_labels"] += len(labels)

    # ---- outputs -------------------------------------------------------------------------

    def _emit(self, record, event, y_pred, proba) -> None:
        if self.cfg.role == "learn":
            return  # the learner predicts for its metric only: the predictors emit
        if self.floors and self._replayed(record):
            return
        value = {
            "id": event.id,
            "prediction": y_pred,
            "model": self.model_name,
            "daemon": self.cfg.client_id,
            **self._model_fields(),
            "event_ts": event.ts if event.ts is not None else record.timestamp,
            "predicted_at_ms": int(time.time() * 1000),
            "source": {"partition": record.partition, "offset": record.offset},
        }
        if proba is not None:
            value["proba"] = {str(k): v for k, v in proba.items()}
        try:
            self.outputs.send(self.cfg.predictions_topic, encode_json(value), key=event.id.encode())
        except errors.RecordTooLarge as exc:  # e.g. a huge id, the proba of many classes
            self._dead_letter(record, BadRecord("output_rejected", f"prediction: {exc}"))

    def _model_fields(self) -> dict:
        """What a prediction record says about the model that made it."""
        return {"n_learned": self.stats.counts["learned"]}

    def _dead_letter(self, record, exc: BadRecord) -> None:
        self.stats.dead_letter(exc.reason)
        if self.floors and self._replayed(record):
            return
        if self.outputs.dead_letter(record, exc.reason, exc.detail):
            self.stats.counts["truncated_dead_letters"] += 1

    def _send_report(self, report: dict) -> None:
        # with exactly-once a report joins the open transaction: send it only when a commit
        # is due soon, or an idle daemon would outlive the broker's transaction timeout
        idle_transaction = self.cfg.exactly_once and not self.since_checkpoint
        if self.cfg.metrics_topic and not idle_transaction:
            self.outputs.send(self.cfg.metrics_topic, encode_json(report))

    def figures(self) -> dict:
        """The report's figures now (also read by the metrics endpoint's thread)."""
        figures = {**self.stats.snapshot(len(self.pending)), "early_labels": len(self.early),
                   "pending_bytes": self.pending.nbytes, "invalid_snapshots": self.invalid_snapshots}
        if self.cfg.role == "learn":  # the newest model sent (visible once its transaction
            figures["model_version"] = self.model_manifest and self.model_manifest["version"]
            figures["model_learned"] = self.learned_at_publish  # commits, with exactly-once)
        return figures

    def _report(self) -> dict:
        return self.reporter.publish(self.figures(), self.events_this_run)

    # ---- durability ----------------------------------------------------------------------

    def _checkpoint_due(self) -> bool:
        return self.since_checkpoint > 0 and (
            self.since_checkpoint >= self.cfg.checkpoint_every
            or time.monotonic() - self.last_checkpoint >= self.cfg.checkpoint_seconds)

    def checkpoint_and_commit(self, reopen: bool = True, group=None) -> None:
        """Flush outputs, write the checkpoint, then commit the offsets it covers.

        With exactly-once the offsets go into the open transaction (with the consumer `group`
        metadata), which is committed after the checkpoint is on disk (a new transaction is
        begun unless `reopen` is false).
        """
        offsets = offsets_to_commit(self._commit_positions(), self.consumer.assignment())
        if self.cfg.exactly_once:
            transact(self.producer, "send_offsets_to_transaction", offsets, group)
        self.outputs.check()  # raises before the checkpoint and the commit if a send failed
        self._persist()
        if self.cfg.exactly_once:
            transact(self.producer, "commit_transaction")
            if reopen:
                self.producer.begin_transaction()
        elif offsets:
            self._commit(offsets)
        self.counts_at_commit = self.stats.counts.copy()  # what a predictor's rollback restores
        self.since_checkpoint = 0
        self.last_checkpoint = time.monotonic()

    def _commit_positions(self) -> dict[str, int]:
        """The next offsets, none below its partition's floor (see `_resume_offset`)."""
        positions = dict(self.next_offsets)
        for tp, floor in self.floors.items():
            if tp_key(tp) in positions:
                positions[tp_key(tp)] = max(positions[tp_key(tp)], floor)
        return positions

    def _persist(self) -> None:
        """Write the checkpoint (and its copy to the state topic)."""
        publisher = self.state_publisher
        checkpoint.save(self.cfg.checkpoint_path, self._state(), self.model,
                        dict(self.next_offsets), self.key, publisher and publisher.next_stamp())
        if publisher:  # with exactly-once, in the transaction of the offsets
            publisher.publish(self.outputs.send, Path(self.cfg.checkpoint_path).read_bytes())
            self.outputs.check()

    def _publish(self) -> None:
        """The learner publishes the model when due, else (at most every `PROGRESS_SECONDS`,
        when it learned) its progress: a small record beside the model the predictors read
        to say how stale their model is."""
        learned = self.stats.counts["learned"]
        if self._publish_due():
            self._publish_model()
        elif (learned > self.learned_at_progress
              and time.monotonic() - self.progress_at >= PROGRESS_SECONDS):
            model = self.model_manifest or {"term": 0, "version": 0}
            progress = {"learned": learned, "events": self.stats.counts["events"],
                        "time_ms": int(time.time() * 1000), "term": model["term"],
                        "version": model["version"]}
            snapshots.send_progress(self.outputs.send, self.cfg.model_topic, "model", progress)
            self.progress_at, self.learned_at_progress = time.monotonic(), learned
            self.since_checkpoint = max(self.since_checkpoint, 1)  # checked at the checkpoint

    def _publish_due(self) -> bool:
        learned = self.stats.counts["learned"] > self.learned_at_publish
        return learned and (
            self.stats.counts["events"] - self.events_at_publish >= self.cfg.publish_every
            or time.monotonic() - self.last_publish >= self.cfg.publish_seconds)

    def _publish_model(self) -> None:
        """Send the live model to the model topic as a signed checkpoint-format snapshot
        (checked, or committed with the transaction, at the next checkpoint)."""
        counts, publisher = self.stats.counts, self.model_publisher
        state = {"model": self.model, "learned": counts["learned"], "events": counts["events"],
                 "published_at_ms": int(time.time() * 1000)}
        payload = checkpoint.dumps(state, self.model, {}, self.key, publisher.next_stamp())
        self.model_manifest = publisher.publish(self.outputs.send, payload)
        self.last_publish = time.monotonic()
        self.events_at_publish, self.learned_at_publish = counts["events"], counts["learned"]
        # a checkpoint is due even when no record follows: it checks the sends (and commits
        # them, in the transaction); otherwise the last snapshot stayed invisible for ever
        self.since_checkpoint = max(self.since_checkpoint, 1)

    def _commit(self, offsets: dict) -> None:
        """Commit offsets; a failure (a rebalance took the partitions, the broker is away) is
        not fatal: the checkpoint on disk covers them and the next commit moves them on."""
        try:
            self.consumer.commit(offsets)
        except errors.ClientError as exc:
            log.warning("offset commit failed (%s); the checkpoint still covers them", exc)

    def _final_checkpoint(self) -> None:
        """On a requested stop: last report, checkpoint and commit (closing the transaction)."""
        if self.processed_this_run:
            if self.cfg.role == "learn" and self.stats.counts["learned"] > self.learned_at_publish:
                self._publish_model()
            self._report()
            self._checkpoint_or_rollback()
        if self.cfg.exactly_once:
            # the empty one begun after the last commit
            transact(self.producer, "abort_transaction")
