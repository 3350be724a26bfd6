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


from river_pa.connectors.codec import encode_json
from river_pa.connectors.config import ServeConfig
from river_pa.connectors.kafka import adapter, errors
from river_pa.connectors.kafka.partitions import RebalanceQueue, TopicPartition
from river_pa.connectors.kafka.diagnostics import quiet_bootstrap, unreachable
from river_pa.connectors.kafka.outputs import topic_limits
from river_pa.connectors.loop.commit import Commits
from river_pa.connectors.loop.ordering import EventTimeOrder
from river_pa.connectors.loop.policy import Policy
from river_pa.connectors.loop.positions import Positions
from river_pa.connectors.loop.records import Records
from river_pa.connectors.models.backfill import Backfilling
from river_pa.connectors.models.control import ControlFollowing
from river_pa.connectors.models.fresh import FreshChallengers
from river_pa.connectors.models.live import LiveModels
from river_pa.connectors.models.pinning import Pinning
from river_pa.connectors.models.publishing import ModelPublishing
from river_pa.connectors.models.slot import ModelSlot
from river_pa.connectors.observe.metrics import Health
from river_pa.connectors.observe.reporting import Reporter
from river_pa.connectors.state import snapshots
from river_pa.connectors.state.recovery import Recovery

__all__ = ["Daemon", "watch_stop"]

log = logging.getLogger("river_pa.serve")

STOP_GRACE_S = 3.0  # after a stop signal, how long before a daemon without a broker exits


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


class Daemon(Recovery, Positions, Records, Commits, ModelPublishing, ControlFollowing,
             Pinning, LiveModels, Backfilling, FreshChallengers):
    """One serving process: a consumer, a producer, a model and its bookkeeping."""

    policy = Policy()  # --role both: predicts, emits, learns, checkpoints

    def __init__(self, cfg: ServeConfig, model):
        self.cfg = cfg
        self.client = adapter(cfg.kafka_client)  # the data path's client library
        self.key = cfg.checkpoint_key.encode() if cfg.checkpoint_key else None
        self.slot = ModelSlot(model)
        self.configured = self.slot  # --model's (another serves after a promotion)
        self._reset_state()
        self.stopping = False
        self.model_failures = 0  # consecutive records the model raised on
        self.processed_this_run = 0
        self.events_this_run = 0
        self.positions_unknown = False
        self.from_state: set[str] = set()  # partitions not positioned since the state's restore
        self.floors: dict[TopicPartition, int] = {}  # see `_resume_offset`
        self.unassigned_since: float | None = None
        self.since_checkpoint = 0
        self.committed_upto: dict[str, int] = {}  # the group's offsets, as last known here
        self.last_checkpoint = time.monotonic()
        self.buffered_upto: dict[TopicPartition, int] = {}
        self.backlog = False
        self.log_ends: dict[TopicPartition, int] = {}
        self.state_name = f"{cfg.group_id}.{cfg.client_id}"
        self.term = 1  # of this writer of snapshots: above every term found at start
        self.state_publisher: snapshots.Publisher | None = None  # with a state topic
        self.invalid_snapshots = 0  # records of the state and model topics not valid, skipped
        self.last_publish = time.monotonic()
        self.events_at_publish = self.learned_at_publish = 0
        # the learner's: the model topic's newest version (one numbering for every model's
        # snapshots), the publishers of the challengers' own and the manifests found of them
        self.model_version = 0
        self.model_publishers: dict[str, snapshots.Publisher] = {}
        self.model_others: dict[str, list[dict]] = {}
        self.progress_at, self.learned_at_progress = time.monotonic(), 0
        self.health = Health()

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; return the exit status."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        cfg = self.cfg
        self.output_topics = [t for t in (cfg.predictions_topic, cfg.dead_letter_topic,
                                          cfg.metrics_topic) if t]
        with quiet_bootstrap():  # a broker that refuses us is one line, not the client's log
            self.consumer = self.client.make_consumer(cfg)
            limits = topic_limits(cfg, self.output_topics)
            self.producer = self.client.make_producer(cfg, limits)
            # end offsets, for the merge (`_log_end`): two topics, or the learner's partitions
            merges = cfg.labels_topic or self.policy.whole_stream
            self.offsets_client = self.client.make_offsets_client(cfg) if merges else None
        self.outputs = self.client.outputs(self.producer, cfg.dead_letter_topic, limits)
        if cfg.exactly_once:  # first: fences a killed predecessor and aborts its transaction
            self.producer.init_transactions()
            self.producer.begin_transaction()
        self._start()
        self._start_control()
        self._publish_committed()
        self.rebalances = RebalanceQueue()
        labels = cfg.labels_topic if self.policy.learns else None
        self.topics = [cfg.events_topic] + ([labels] if labels else [])
        self._subscribe()
        self.order = EventTimeOrder(cfg.events_topic, labels, self._exhausted, TopicPartition,
                                    self.consumer.assignment if self.policy.whole_stream else None,
                                    (cfg.merge_idle_ms or 0) / 1000)
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
        closes = [partial(self.client.close_producer, self.producer, None if flush else 0),
                  partial(self.consumer.close, autocommit=False)]
        if self.offsets_client is not None:
            closes.append(self.offsets_client.close)
        if self.control_reader is not None:
            closes.append(self.control_reader.close)
        closes += [backfill.close for backfill in (self.backfills or {}).values()]
        for close in closes:
            try:
                close()
            except errors.ClientError as exc:
                log.warning("closing a Kafka client: %s", exc)

    def _subscribe(self) -> None:
        """Join the consumer group on the input topics (the learner assigns itself instead)."""
        self.consumer.subscribe(self.topics, listener=self.rebalances)

    def _on_signal(self, signum, frame) -> None:
        log.info("signal %d: finishing the current batch", signum)
        if not self.stopping:
            watch_stop(self.cfg)
        self.stopping = True

    def _step(self) -> None:
        """Poll (without waiting while ready records remain), then process one bounded batch."""
        timeout = 0 if self.backlog else self.cfg.poll_timeout_ms
        polled = self.client.poll(self.consumer, timeout)
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
        deadline = time.monotonic() + self.cfg.batch_seconds
        batch = self._process_ready(deadline)
        self.backlog = batch > 0 and (batch == self.cfg.max_poll_records
                                      or time.monotonic() > deadline or self._batch_ends())
        self._flow_control()
        handled = self._follow_control()
        self._step_backfills(idle=batch == 0)
        if self.policy.publishes:
            self._publish()
        # a control record handled: at once, `river-pa models promote` waits for it (an idle
        # exactly-once learner sends a report only inside the transaction the record opened)
        if handled or self.reporter.due(self.stats.counts["events"]):
            self._report()
        if self._checkpoint_due():
            self._checkpoint_or_rollback()

    def _process_ready(self, deadline: float) -> int:
        """Process the records ready in merge order, one at a time, up to max_poll_records
        or until `deadline` (monotonic s) has passed; return how many."""
        batch = 0
        for record in itertools.islice(self.order.ready(), self.cfg.max_poll_records):
            self._process(record)
            batch += 1
            # a slow model: poll again well inside max.poll.interval.ms
            if time.monotonic() > deadline or self._batch_ends():
                break
        return batch

    def _batch_ends(self) -> bool:
        """Whether the batch stops after the record just processed (a shard's round is full:
        connectors/shards/rounds.py)."""
        return False

    def _send_report(self, report: dict) -> None:
        # with exactly-once a report joins the open transaction: send it only when a commit
        # is due soon, or an idle daemon would outlive the broker's transaction timeout
        idle_transaction = self.cfg.exactly_once and not self.since_checkpoint
        if self.cfg.metrics_topic and not idle_transaction:
            self.outputs.send(self.cfg.metrics_topic, encode_json(report))

    def figures(self) -> dict:
        """The report's figures now (also read by the metrics endpoint's thread)."""
        figures = {**self.stats.snapshot(len(self.pending)), "early_labels": len(self.early),
                   "pending_bytes": self.pending.nbytes,
                   "invalid_snapshots": self.invalid_snapshots}
        if self.challengers or self.control_reader:  # `river-pa models` reads them there
            figures["served"], figures["events_topic"] = self.slot.name, self.cfg.events_topic
            figures["control_skipped"] = self.invalid_control
            figures["control"] = {"topic": self.cfg.control_topic,
                                  "next_offset": self.control["offset"],
                                  "outcomes": self.control_recent or {}}
            figures["challengers"] = {n: c.figures() for n, c in self.challengers.items()}
            if self.backfills:  # added live, not joined yet (models/backfill.py)
                figures["backfilling"] = {n: b.figures() for n, b in self.backfills.items()}
        if self.policy.publishes:  # the newest model sent (visible once its transaction
            figures["model_version"] = self.slot.manifest and self.slot.manifest["version"]
            figures["model_learned"] = self.learned_at_publish  # commits, with exactly-once)
            figures["pinned"] = self.control["pinned"]  # models/pinning.py
        return figures

    def _report(self) -> dict:
        self._before_write()
        return self.reporter.publish(self.figures(), self.events_this_run)
