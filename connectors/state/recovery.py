"""Recovery: the daemon's state restored at start and after a rollback, from its checkpoint
file or the state topic (a new node), the checkpoint that matches the committed offsets with
exactly-once, and a learner refused when it would start empty over committed offsets."""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path

from river_pa.connectors.kafka.admin import ensure_topic
from river_pa.connectors.kafka.partitions import TopicPartition
from river_pa.connectors.models.challengers import Challenger, Duel, make_challengers
from river_pa.connectors.models.slot import ModelSlot
from river_pa.connectors.observe.drift import make_detector
from river_pa.connectors.observe.reporting import Stats, serve_metrics
from river_pa.connectors.state import checkpoint, snapshots
from river_pa.connectors.state.pending import PendingStore

__all__ = ["Recovery"]

log = logging.getLogger("river_pa.serve")

# what a snapshot of the state topic holds (besides the model)
STATE_FIELDS = {"stats": Stats, "pending": PendingStore, "early": PendingStore, "offsets": dict}
INVALID_LINES, INVALID_EVERY = 20, 1000  # lines for skipped snapshot records (see _invalid_snapshot)


def merge_keys(value) -> dict[int, tuple]:
    """The merge's order keys restored (`EventTimeOrder.late`): the entries that are an int and
    a tuple of four ints; a state written before them, or another value, gives none (lateness
    counted afresh; a key of another type would raise at every record's comparison)."""
    if not isinstance(value, dict):
        return {}
    return {merge: key for merge, key in value.items() if type(merge) is int
            and type(key) is tuple and len(key) == 4 and all(isinstance(k, int) for k in key)}


FORMER = "the former served model"  # a promotion's challenger (`Recovery._promote`)


def promoted(state, meta: dict) -> str | None:
    """The challenger of `state` (a restored state dict) whose model and parameters are
    `meta`'s (this start's --model) when its served model's are not: a promotion."""
    challengers = state.get("challengers") if isinstance(state, dict) else None
    if not isinstance(challengers, dict) or checkpoint.same_meta(_meta_of(state.get("model")),
                                                                 meta):
        return None
    return next((name for name, c in challengers.items()
                 if isinstance(c, dict) and checkpoint.same_meta(c.get("meta"), meta)), None)


def fresh_control() -> dict:
    """The control state of a daemon that has obeyed no control record: the control topic's
    next offset to obey and the issue time of the last command obeyed; the challenger serving
    since a control record (None: --model serves) and the --model it replaced
    (models/control.py); the version pinned (models/pinning.py); the challengers added (their
    spec) and removed (None) live, those still backfilling (models/live.py, backfill.py) and
    those the learner made on a drift and the served model whose drift made the newest
    (models/fresh.py)."""
    return {"offset": 0, "issued": 0, "served": None, "configured": None, "pinned": None,
            "models": {}, "backfilling": [], "made": [], "drifted": None}


def copy_control(control: dict) -> dict:
    """A copy of `control` that shares nothing that changes (a state's, a checkpoint's)."""
    return {**control, "models": dict(control["models"]),
            "backfilling": list(control["backfilling"]), "made": list(control["made"])}


def control_of(state) -> dict:
    """The control state of a restored `state` (models/control.py), checked; a state
    written before control records, or another value, gives a fresh one."""
    control = state.get("control") if isinstance(state, dict) else None
    fresh = fresh_control()
    if isinstance(control, dict):  # a state before pins and live challengers
        control = {**{k: fresh[k] for k in ("pinned", "models", "backfilling", "made",
                                            "drifted")}, **control}
    if not (isinstance(control, dict) and set(control) == set(fresh)
            and type(control["offset"]) is int and control["offset"] >= 0
            and type(control["issued"]) is int
            and all(control[k] is None or isinstance(control[k], str)
                    for k in ("served", "drifted"))
            and (control["configured"] is None or isinstance(control["configured"], dict))
            and _pin_of(control["pinned"]) and isinstance(control["models"], dict)
            and all(isinstance(k, str) and (v is None or isinstance(v, str))
                    for k, v in control["models"].items())
            and all(isinstance(control[k], list) and all(isinstance(n, str) for n in control[k])
                    for k in ("backfilling", "made"))):
        return fresh
    return copy_control(control)


def _pin_of(pinned) -> bool:
    """Whether `pinned` is a control state's pin: None, or the name and version pinned."""
    return pinned is None or (isinstance(pinned, dict) and set(pinned) == {"name", "version"}
                              and isinstance(pinned["name"], str)
                              and type(pinned["version"]) is int)


def _meta_of(model) -> dict | None:
    try:
        return checkpoint.metadata(model)
    except Exception:  # noqa: BLE001 (a payload that is no model: no promotion; refused later)
        return None


class Recovery:
    """The state of a daemon (model, metrics, pending events, early labels, next offsets): reset,
    saved as a dict, restored from a checkpoint or a snapshot topic."""

    def _reset_state(self) -> None:
        """The state of a daemon that has seen nothing (serving its --model)."""
        if self.slot is not self.configured:  # a control record promoted another model
            self.slot = self._slot_for(self.configured.pristine.clone(), self.configured.name)
        self.slot.reset()
        self.stats = self._new_stats(self.slot.model)
        self.challengers = {name: Challenger(name, model, self._new_stats(model), self._duel())
                            for name, model in self._challenger_models}
        self.pending = PendingStore(self.cfg.pending_max, self.cfg.pending_ttl_ms,
                                    self.cfg.pending_max_bytes)
        self.early = PendingStore(self.cfg.pending_max, self.cfg.pending_ttl_ms,
                                  self.cfg.pending_max_bytes)
        self.next_offsets: dict[str, int] = {}
        self.merged_upto: dict[int, tuple] = {}  # see EventTimeOrder.late
        self.control = fresh_control()
        self._stop_backfills()
        self.control_seek = True
        self.promoted_at = 0  # the served model's labels when it was promoted (0: never)

    def _slot_for(self, model, name: str) -> ModelSlot:
        """A slot serving `model` under `name`, in this daemon's place in the model topic."""
        slot = ModelSlot(model)
        slot.model, slot.name = model, name
        slot.snapshot, slot.manifest, slot.publisher = \
            self.slot.snapshot, self.slot.manifest, self.slot.publisher
        return slot

    @functools.cached_property
    def _challenger_models(self) -> list[tuple[str, object]]:
        """(name, model) of each --challenger, made and checked once (each reset and
        rollback clones them: `ModelSlot`); none for a daemon that learns nothing."""
        cfg = self.cfg
        return make_challengers(cfg.challenger, self.slot.pristine, cfg.metric) \
            if self.policy.learns else []

    def _duel(self) -> Duel:
        cfg = self.cfg
        return Duel(cfg.rolling_window, cfg.challenger_alpha, cfg.challenger_min_labels)

    def _new_stats(self, model) -> Stats:
        cfg = self.cfg
        return Stats(serve_metrics(cfg.metric, model), cfg.rolling_window, self._detector())

    def _state(self) -> dict:
        return {"model": self.slot.model, "stats": self.stats, "pending": self.pending,
                "early": self.early, "offsets": dict(self.next_offsets),
                "merged_upto": dict(self.merged_upto),
                "control": copy_control(self.control),
                "promoted_at": self.promoted_at,
                "challengers": {name: c.state() for name, c in self.challengers.items()}}

    def _restore(self, state: dict) -> None:
        self.control, self.control_seek = control_of(state), True
        promoted_at = state.get("promoted_at")  # none in older states
        self.promoted_at = promoted_at if type(promoted_at) is int else 0
        if self._promoted_by_control(state):
            self._serve_promoted(state)
        elif name := promoted(state, self.slot.meta):
            self._promote(state, name)
            self.promoted_at = state["stats"].counts["labelled"]
            log.info("challenger %s promoted: it is the served model from now on, its metrics "
                     "continue (%s); the former served model goes on as a challenger if "
                     "--challenger names its model and parameters", name,
                     state["stats"].in_words())
        self.slot.model = state["model"]
        self.stats = state["stats"]
        self.pending = state["pending"]
        self.early = state.get("early", self.early)  # checkpoints written before early labels
        self.next_offsets = dict(state["offsets"])
        self.merged_upto = merge_keys(state.get("merged_upto"))  # none in older states
        self._live_changes()
        saved = state.get("challengers")
        saved = dict(saved) if isinstance(saved, dict) else {}  # none in older states
        self._restore_challengers(saved, self._restore_made(saved))
        self._apply_settings()
        self._stop_backfills()
        self._restart_backfills()

    def _promoted_by_control(self, state: dict) -> bool:
        """Whether `state` serves a model a control record promoted while this start's
        --model was the one it replaced: the promotion stands (a restart with the same
        settings must not undo it)."""
        configured = self.control["configured"]
        return (configured is not None and checkpoint.same_meta(configured, self.configured.meta)
                and not checkpoint.same_meta(_meta_of(state.get("model")), configured))

    def _serve_promoted(self, state: dict) -> None:
        """Serve `state`'s model (promoted by a control record) and learn --model as the
        challenger the state names it (`FORMER`), beside the --challenger models other than
        the one serving."""
        served = self.control["served"] or type(state["model"]).__name__
        self.slot = self._slot_for(state["model"], served)
        meta = self.slot.meta
        former = next((n for n, c in (state.get("challengers") or {}).items() if isinstance(c, dict)
                       and n not in self.control["made"]  # a fresh copy of it (models/fresh.py)
                       and checkpoint.same_meta(c.get("meta"), self.configured.meta)), FORMER)
        models = [(n, m) for n, m in self._challenger_models
                  if n != served and not checkpoint.same_meta(checkpoint.metadata(m), meta)]
        models.append((former, self.configured.pristine))
        changed = dict(self._challenger_models).get(served)
        if changed is not None and not checkpoint.same_meta(checkpoint.metadata(changed), meta):
            log.warning("--challenger %s names other parameters than the %s serving (promoted by "
                        "a control record): it serves as it is; give the challenger another "
                        "name to learn the new parameters beside it", served, served)
        self.challengers = {n: Challenger(n, m, self._new_stats(m), self._duel())
                            for n, m in models}
        log.info("%s serves since a promotion (`river-pa models promote` or --auto-promote); "
                 "--model %s goes on as challenger %s", served, self.configured.name, former)

    def _promote_live(self, name: str, why: str) -> None:
        """Make challenger `name` the served model now (a control record or an automatic
        promotion, `why`), as `_promote` does at a start; the served model goes on as a
        challenger under the name it was promoted with (`FORMER` for --model), and the model
        topic gets the new served model at once."""
        state, demoted, old = self._state(), self.control["served"] or FORMER, self.slot.name
        if demoted in self.challengers and demoted != name:  # a former one of a restart
            demoted = f"{demoted} {old}"
        self._promote(state, name, demoted, type(self.challengers[name].slot.pristine))
        is_configured = checkpoint.same_meta(self.challengers[name].slot.meta,
                                             self.configured.meta)
        self.slot = self._slot_for(state["model"], self.configured.name if is_configured
                                   else name)
        self.control.update(served=None if is_configured else name,
                            configured=None if is_configured else self.configured.meta)
        self.challengers = {n: self._challenger_from(n, saved)
                            for n, saved in state["challengers"].items()}
        self._made_promoted(name, old, demoted)
        self.since_checkpoint = max(self.since_checkpoint, 1)
        self.promoted_at = self.stats.counts["labelled"]
        if self.policy.publishes:
            self._end_pin(f"no longer pinned: {name} was promoted")
            self._publish_soon()
        log.warning("%s promoted by %s at label %d: it serves from now on (%s); %s goes on as "
                    "challenger %s", name, why, self.promoted_at, self.stats.in_words(), old,
                    demoted)

    def _challenger_from(self, name: str, saved: dict) -> Challenger:
        challenger = Challenger(name, saved["model"], saved["stats"], self._duel())
        challenger.restore(saved)
        return challenger

    def _promote(self, state: dict, name: str, former_name: str = FORMER, kind=None) -> None:
        """Make challenger `name` of `state` its served model (this start's --model is that
        challenger's model, of class `kind`): its model, metrics and drift watch, and its
        predictions of the pending events, continue as the served model's; the former served
        model becomes a challenger, `former_name`, which a --challenger with its model and
        parameters continues."""
        promoted = state["challengers"].pop(name)
        if not (isinstance(promoted.get("model"), kind or type(self.slot.pristine))
                and isinstance(promoted.get("stats"), Stats)):
            raise checkpoint.CheckpointError(f"the state's challenger {name} is not valid")
        former, stats = state["model"], state["stats"]
        stats.swap_scores(promoted["stats"])
        state["model"] = promoted["model"]
        for count in ("labelled", "learned"):  # the former served model learned them all
            promoted["stats"].counts[count] = stats.counts[count]
        state["challengers"][former_name] = {"model": former, "stats": promoted["stats"],
                                             "errors": 0, "meta": checkpoint.metadata(former)}
        for challenger in state["challengers"].values():
            if isinstance(challenger, dict):  # their duels were with the former served model
                challenger.pop("duel", None)
        for entry in state["pending"].entries():
            others = entry.others or {}
            entry.y_pred, others[former_name] = others.pop(name, None), entry.y_pred
            entry.others = others

    def _rename_predictions(self, old: str, new: str) -> None:
        """The pending events' predictions by challenger `old` are challenger `new`'s."""
        for entry in self.pending.entries():
            if entry.others and old in entry.others:
                entry.others[new] = entry.others.pop(old)

    def _restore_challengers(self, saved: dict, restored: set) -> None:
        """Continue the challengers the restored state holds (`saved`, by name; those in
        `restored` are continued already) with the same model and parameters (by name, or
        else the one with them: a renamed challenger, the former served model after a
        promotion); the others start afresh, and the state's challengers no longer named are
        dropped, each said in one line."""
        for name, challenger in self.challengers.items():
            if name in restored:
                continue
            if challenger.restore(saved.get(name)):
                saved.pop(name)
                continue
            same = next((n for n, c in saved.items() if challenger.restore(c)), None)
            if same is not None:
                log.info("challenger %s continues %s of the restored state (its model and "
                         "parameters)", name, same)
                saved.pop(same)
                self._rename_predictions(same, name)
                continue
            log.info("challenger %s starts from nothing: %s", name, "its model or "
                     "parameters changed" if saved.pop(name, None) else "new to this state")
        for name in sorted(saved):
            log.info("challenger %s of the restored state dropped: not named by --challenger",
                     name)

    def _apply_settings(self) -> None:
        """Apply this start's bounds and metrics to a restored state (they were ignored): the
        pending entries and early labels beyond the bounds are evicted now (counted as expired
        and orphan labels), entries older than a new TTL at the next event. Another `--metric`
        or `--rolling-window` restarts the metrics from zero, said in one line: they observe
        the model, which is kept, and refusing would leave a new group (relearning everything)
        as the only way to change a dashboard. Another drift detector (or a state written before
        drift was watched) starts the drift watch afresh, likewise."""
        cfg = self.cfg
        expired = self.pending.bound(cfg.pending_max, cfg.pending_ttl_ms, cfg.pending_max_bytes)
        orphans = self.early.bound(cfg.pending_max, cfg.pending_ttl_ms, cfg.pending_max_bytes)
        self._count_expired(expired)
        self._count_orphans(orphans)
        if expired or orphans:
            log.info("the restored state was over --pending-max/--pending-max-bytes: %d pending "
                     "events expired, %d early labels orphaned", len(expired), len(orphans))
        self._use_settings(self.stats, self.slot.model, "")
        for name, challenger in self.challengers.items():
            self._use_settings(challenger.stats, challenger.slot.model, f"challenger {name}: ")

    def _use_settings(self, stats: Stats, model, whose: str) -> None:
        """Give restored `stats` (of `model`) this start's metrics and drift detector."""
        cfg = self.cfg
        old = [type(m).__name__ for m in stats.metric], stats.rolling.window_size
        if stats.use_metrics(serve_metrics(cfg.metric, model), cfg.rolling_window):
            log.info("%smetrics %s (window %d) restart from zero as %s (window %d): counts and "
                     "the model are kept", whose, *old, [type(m).__name__ for m in stats.metric],
                     cfg.rolling_window)
        if stats.use_detector(self._detector()):
            log.info("%sdrift watch starts afresh with --drift-detector %s %s (a state written "
                     "before it, or with another detector)", whose, cfg.drift_detector,
                     json.dumps(cfg.drift_params))

    def _detector(self):
        """A new detector of the drift watch; None for a daemon that scores no predictions (a
        predictor) or with --drift-detector none."""
        cfg = self.cfg
        return make_detector(cfg.drift_detector, cfg.drift_params) if self.policy.learns else None

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

    def load(self) -> None:
        """Restore the state from the checkpoint, if there is one (else start afresh)."""
        self._reset_state()
        path = self._checkpoint_to_load(self.consumer)
        if path is None:
            log.info("no checkpoint to load from %s: starting afresh", self.cfg.checkpoint_path)
        else:
            self._restore(checkpoint.load(path, self.slot.meta, self.key))
            log.info("restored %s: %d events, offsets %s", path, self.stats.counts["events"],
                     self.next_offsets)

    def _start(self) -> None:
        """Restore the state (from the state topic on a new node, then the checkpoint)."""
        if self.cfg.state_topic:
            self._restore_from_state_topic()
        self.load()
        self.from_state = set(self.next_offsets)

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
            if path.exists() and self.policy.local_checkpoint_wins:
                return  # the local file is at least as new: written before its copy was sent
            # another --model's state, signed with our key (or unsigned, with no key): exit 3
            found = self._newest_valid(reader, cfg.state_topic, STATE_FIELDS,
                                       fatal=checkpoint.VersionMismatch)
            self.state_publisher.verified(found and found[0])
        finally:
            reader.close()
        if found is None:
            return
        manifest, payload, _ = found
        tmp = path.with_name(path.name + ".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
        log.info("%s: restored version %d/%d (%d bytes) from %s",
                 "no local checkpoint" if self.policy.local_checkpoint_wins else "the group's state",
                 manifest["term"], manifest["version"], len(payload), cfg.state_topic)

    def _snapshot_reader(self, topic: str, name: str, **others) -> snapshots.Reader:
        """A reader of snapshot `name` (and with `others=True`, the manifests of `name@OTHER`:
        `snapshots.Reader`) that has read `topic` to its end (the topic is created, compacted,
        replicated up to 3 times, if it is missing); the caller closes it."""
        ensure_topic(self.cfg, topic)
        reader = snapshots.Reader(self.client.make_offsets_client(self.cfg), topic, name,
                                  self._invalid_snapshot, **others)
        reader.read_to_end(120)
        return reader

    def _newest_valid(self, reader: snapshots.Reader, topic: str, fields: dict, fatal=()):
        """(manifest, payload, state) of the newest version in `reader` that verifies like a
        checkpoint (its signed header naming its term and version) and holds a dict with
        `fields` (name -> type; "model" always, of the configured model's class), or None;
        each one that does not is reported and dropped (errors of the types `fatal` raise)."""
        for manifest, payload in reader.candidates():
            try:
                stamp = {"term": manifest["term"], "version": manifest["version"]}
                _, state = checkpoint.loads(payload, self.slot.meta, self.key, "its payload",
                                            stamp)
            except fatal:
                raise
            except checkpoint.CheckpointError as exc:
                reader.reject(manifest, str(exc))
                continue
            # the model of this --model, or a challenger of the state to promote (`_promote`)
            served = {"model": type(self.slot.pristine)} if not promoted(state, self.slot.meta) \
                else {"challengers": dict}
            wrong = [k for k, t in {**served, **fields}.items() if not isinstance(
                state.get(k) if isinstance(state, dict) else None, t)]
            if wrong:
                reader.reject(manifest, f"its payload lacks or mistypes {wrong[0]!r}")
                continue
            return manifest, payload, state
        return None

    def _invalid_snapshot(self, reason: str) -> None:
        """One count for a record of the state or model topic that is skipped, and one line
        for each of the first `INVALID_LINES`, then for one in `INVALID_EVERY` (a new user's
        flood of forged chunks gave 298,187 lines in a minute, 115 MB at each restart)."""
        self.invalid_snapshots += 1
        n = self.invalid_snapshots
        if n <= INVALID_LINES or n % INVALID_EVERY == 0:
            log.warning("invalid snapshot record skipped: %s%s", reason, "" if n < INVALID_LINES
                        else f" ({n} so far; one line per {INVALID_EVERY} from now on)")

    def _check_state(self, committed: dict) -> None:
        """Refuse to start a learner with no state whose group has `committed` offsets (the
        state topic emptied or deleted): its model would start empty at the committed offsets
        and never learn what lies before them. `allow_empty_state` accepts it; the learner
        then relearns from where `auto_offset_reset` says (earliest: all the topics retain),
        not from the committed offsets, which would leave the model without the past."""
        if not self.policy.whole_stream or self.next_offsets or self.cfg.allow_empty_state:
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
