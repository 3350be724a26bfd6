"""Sharded learners (`river-pa serve --role learn --shards N`): iterative parameter mixing over
Kafka, in synchronous rounds.

Source: R. McDonald, K. Hall and G. Mann (2010), Distributed Training Strategies for the
Structured Perceptron, NAACL, Section 3, Figure 3: shards learn their part of the stream, their
models are averaged, weighted by the events each learned since the last mix, and every shard
continues from the average (`river_pa.mix`; `river-pa evaluate --shards` measures what it costs
before any broker runs).

Shard s is led by the learner holding partition s of the lease topic (roles/lease.py; the others
are standbys) and learns the partitions p of the events and labels topics with p mod N = s,
which must be co-partitioned (an event and its label in the same partition: checked at start).
Each shard has its own state in the state topic (`<group_id>.learner.shard<s>`), checkpoint file
(`<checkpoint_path>.shard<s>`) and transactional id (`<transactional_id>.shard<s>`).

A round. Shard s ends round r once it has learned ceil(K/N) labelled events since the last mix
(`--mix-every K`), or, read to the end of its partitions with nothing buffered, as soon as
another shard waits for it, or `--mix-seconds` after the round began when it learned some (the
stream's tail, a quiet shard). It then sends its contribution (its model and weight, the events it learned in the
round) to the mix topic (shards/topic.py) and checkpoints its state, which records the round as
sent (with `--exactly-once` in one transaction; without, the checkpoint first: a contribution
in the topic is always one the state says is sent, which a new leader sends again), waits for
the contributions of every shard to round r, and continues from their mix, the same in every shard: the mix of one round's
contributions in shard order. Shard 0 publishes each mix to the model topic, the one model the
predictors serve (no shard publishes its own). A barrier per round, not bounded staleness: the
mix is then a function of the recorded contributions alone, so a shard's new leader (a failover,
a restart) that restores a state which sent round r mixes the same contributions again, and one
that restores an earlier state relearns the same records in the same event-time order
(loop/ordering.py) up to the same end of round: the model lands where an uninterrupted run's
does. The cost is that every shard waits for the slowest at each mix; a shard that is gone
holds the others until its standby takes over (a session timeout and a state restore).

"""

from __future__ import annotations

import functools
import logging
import math
import time

from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.admin import ensure_topic
from river_pa.connectors.kafka.topics import MIX_TOPIC_CONFIGS
from river_pa.connectors.shards.topic import MixTopic

__all__ = ["ShardRounds", "fresh_mixing"]

log = logging.getLogger("river_pa.serve")

WAIT_POLL_MS = 200  # a shard waiting for the others polls the mix topic this long at a time
EARLY_WARN = 1000  # early labels a shard holds before `_check_keys` warns
WAIT_LINE_S = 60.0  # a shard waiting for others says so again this often


def fresh_mixing(shard: int, shards: int) -> dict:
    """The mixing state of a shard that has mixed nothing yet."""
    return {"shard": shard, "shards": shards, "round": 1, "sent": False, "weight": 0,
            "learned_at_mix": 0, "mixed_learned": 0}


class ShardRounds:
    """The rounds of a sharded learner (a mixin of roles/learner.py's `Learner`; with one
    shard, none of it runs)."""

    shard = 0  # the shard this learner leads (`lead`)
    round_sent = 0  # the round whose contribution this term sent
    keys_warned = False  # `_check_keys` said it this term

    @property
    def sharded(self) -> bool:
        return self.cfg.shards > 1

    def _start_mixing(self) -> None:
        """Read the mix topic (created if missing) and start the round the state is in."""
        self.round_began = time.monotonic()
        if not self.sharded:
            return
        ensure_topic(self.cfg, self.cfg.mix_topic, configs=MIX_TOPIC_CONFIGS)
        self._read_mix_topic()
        log.info("shard %d of %d: round %d%s", self.shard, self.cfg.shards, self.mixing["round"],
                 " (sent; waiting for the other shards)" if self.mixing["sent"] else "")

    def _read_mix_topic(self) -> None:
        """Read the mix topic from its start: at the start, and after a restore (a rollback
        took the state back to a round whose contributions the reader had dropped: the
        shard soak's seed 21 waited for them for ever)."""
        self._close_mix_topic()
        self.mix_topic = MixTopic(self.client.make_offsets_client(self.cfg), self.cfg.mix_topic,
                                  self.cfg.group_id, self.shard, self.cfg.shards,
                                  self._invalid_snapshot)
        self.mix_topic.read_to_end(120, self.term)

    def _close_clients(self, flush: bool) -> None:
        super()._close_clients(flush)
        self._close_mix_topic()

    def _close_mix_topic(self) -> None:
        if getattr(self, "mix_topic", None) is not None:
            try:
                self.mix_topic.close()
            except errors.ClientError as exc:
                log.warning("closing a Kafka client: %s", exc)
            self.mix_topic = None

    def _check_mixing(self, mixing) -> dict:
        """The mixing state restored from `mixing` (a state's), checked against the settings."""
        if not self.sharded:
            return fresh_mixing(0, 1)
        fresh = fresh_mixing(self.shard, self.cfg.shards)
        if not isinstance(mixing, dict) or set(mixing) != set(fresh) or not all(
                type(v) is type(fresh[k]) for k, v in mixing.items()):
            return fresh  # a state of a learner without shards: its first round
        for name in ("shards", "shard"):
            if mixing[name] != fresh[name]:
                from river_pa.connectors.errors import SettingsConflict

                raise SettingsConflict(
                    f"river-pa serve: the state of {self.state_name} was written by shard "
                    f"{mixing['shard']} of {mixing['shards']}, and this learner leads shard "
                    f"{self.shard} of {self.cfg.shards}: the shards' states hold their own "
                    "partitions' records; keep --shards, or start afresh with a new group id")
        return dict(mixing)

    @functools.cached_property
    def per_round(self) -> float:
        """The labels a shard learns in a round, ceil(K/N) (no end without shards)."""
        return math.ceil(self.cfg.mix_every / self.cfg.shards) if self.sharded else math.inf

    def _batch_ends(self) -> bool:
        """Whether the batch stops after this record (called for each one): the round is full."""
        return self.stats.counts["learned"] - self.mixing["learned_at_mix"] >= self.per_round

    def _round_due(self) -> bool:
        """Whether the round ends now: full, or this shard read to its end while another
        waits for it or `--mix-seconds` after the round began with something learned."""
        self._check_keys()
        if self.mixing["sent"] or self._batch_ends():
            return True
        if self.last_batch:
            return False
        # has another shard sent this round? The topic read only while waiting, a quiet
        # shard never knew (the shard soak's seed 1); joining only --mix-seconds after the
        # round began capped the others at ceil(K/N) labels per --mix-seconds (a new user's
        # try): a shard read to its end joins at once
        self.mix_topic.poll(0)
        waited = self.mix_topic.waiting(self.mixing["round"])
        learned = self.stats.counts["learned"] > self.mixing["learned_at_mix"]
        timed = learned and time.monotonic() - self.round_began >= self.cfg.mix_seconds
        return (waited or timed) and self._read_to_end()

    def _read_to_end(self) -> bool:
        """Every record of this shard's partitions read and processed."""
        return not any(self.order.buffers.values()) and all(
            self._exhausted(tp) for tp in self.consumer.assignment())

    def _mix_round(self) -> None:
        """End the round: send this shard's contribution and checkpoint (unless the restored
        state sent it), wait for every shard's, continue from the mix. A stop while waiting
        leaves the round sent; the next start waits again."""
        mixing = self.mixing
        if not mixing["sent"]:
            learned = self.stats.counts["learned"]
            mixing.update(sent=True, weight=learned - mixing["learned_at_mix"])
            if self.cfg.exactly_once:  # the contribution, the state and the offsets: one
                self._send_contribution()  # transaction
            self.since_checkpoint = max(self.since_checkpoint, 1)
            self._checkpoint_or_rollback()
            if not self.mixing["sent"]:  # rolled back: the round's records are learned again
                return
        if not self.cfg.exactly_once and self.round_sent != mixing["round"]:
            # after the checkpoint, so a contribution is never one a new leader would not
            # send again (a crash before the checkpoint: the round is relearned, maybe ended
            # elsewhere by --mix-seconds); sent again by a leader that restored it as sent
            self._send_contribution()
            self.outputs.check()
        got = self._wait_for_round()
        if got is not None:
            self._continue_from(got)

    def _check_keys(self) -> None:
        """Warn (once a term) when the shard holds more labels whose event it has not seen
        than `EARLY_WARN`: labels not keyed like their events reach another shard than their
        events, and neither is ever learned (a new user's unkeyed labels: half the stream
        never learned, without a word; one learner reads every partition and learns them)."""
        if not self.keys_warned and len(self.early) > EARLY_WARN:
            log.warning("shard %d holds %d labels whose events it has not seen (and %d events "
                        "waiting for their label): is each label keyed like its event? A shard "
                        "reads only its partitions (docs/serving/shards.md)", self.shard,
                        len(self.early), len(self.pending))
            self.keys_warned = True

    def _send_contribution(self) -> None:
        self._before_write()
        self.mix_topic.send(self.outputs.send, self._contribution(), self.slot.model, self.key)
        self.round_sent = self.mixing["round"]

    def _contribution(self) -> dict:
        mixing = self.mixing
        return {"round": mixing["round"], "shard": self.shard, "shards": self.cfg.shards,
                "weight": mixing["weight"], "model": self.slot.model}

    def _wait_for_round(self) -> dict | None:
        """Every shard's contribution to the round (None: a stop came first)."""
        rnd, said, began = self.mixing["round"], 0, time.monotonic()
        meta, model_class = self.slot.meta, type(self.slot.pristine)
        while True:
            got = self.mix_topic.contributions(rnd, meta, self.key, model_class)
            got[self.shard] = self._contribution()  # its own, as sent (the same model)
            if len(got) == self.cfg.shards or self.stopping:
                return got if len(got) == self.cfg.shards else None
            if time.monotonic() - began > 2 * self.cfg.mix_seconds + said * WAIT_LINE_S:
                log.info("round %d: waiting for shards %s", rnd, ", ".join(
                    str(s) for s in range(self.cfg.shards) if s not in got))
                said += 1  # again every WAIT_LINE_S (a shard that never comes: say so)
            self._before_write()  # the lease still ours (LeaseLost otherwise)
            self.health.beat = time.monotonic()
            self.mix_topic.poll(WAIT_POLL_MS)

    def _continue_from(self, got: dict) -> None:
        """Serve and learn on from the mix of `got` (shard 0 publishes it)."""
        from river_pa.mixing import mix

        rnd = self.mixing["round"]
        weights = [got[s]["weight"] for s in range(self.cfg.shards)]
        if sum(weights):
            self.slot.model = mix([got[s]["model"] for s in range(self.cfg.shards)], weights)
        self.mixed_model = self.slot.model
        self.mixing.update(round=rnd + 1, sent=False, weight=0,
                           learned_at_mix=self.stats.counts["learned"],
                           mixed_learned=self.mixing["mixed_learned"] + sum(weights))
        self.mix_topic.mixed(rnd)
        self.round_began = time.monotonic()
        self.since_checkpoint = max(self.since_checkpoint, 1)  # the mixed state, soon
        if self.shard == 0 and sum(weights):
            self._publish_mix()

    def _publish_mix(self) -> None:
        """Send the newest mix to the model topic (shard 0, once per mix)."""
        if self.mixed_model is None or self.published_round == self.mixing["round"]:
            return
        self._before_write()
        state = {"model": self.mixed_model, "learned": self.mixing["mixed_learned"],
                 "events": self.stats.counts["events"],
                 "published_at_ms": int(time.time() * 1000), "name": self.slot.name,
                 "challengers": {}}
        self._send_snapshot(state, self.mixed_model)
        self.published_round = self.mixing["round"]
        self.last_publish = time.monotonic()
        # the report's model_learned: the mix's labels (`river-pa models list` said shard 0's)
        self.learned_at_publish = self.mixing["mixed_learned"]
        self.events_at_publish = self.stats.counts["events"]
