"""One record: decode and validate (or dead-letter), predict, emit, then learn now or keep
the event until its label comes; a model that raises on `MODEL_FAILURES_TO_STOP` records in a
row stops the daemon."""

from __future__ import annotations

import logging
import time

from river_pa._core.validation import TooManyFeaturesError
from river_pa.connectors.codec import (
    BadRecord, TooManyClassesError, decode_event, decode_label, encode_json,
)
from river_pa.connectors.errors import ModelError
from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.partitions import tp_key
from river_pa.connectors.state.pending import Pending

__all__ = ["Records"]

log = logging.getLogger("river_pa.serve")

MODEL_FAILURES_TO_STOP = 100


class Records:
    """What the loop does with each record it releases."""

    def _process(self, record) -> None:
        if self.order.labels_topic and self.order.late(record, self.merged_upto):
            self.stats.counts["late_records"] += 1
        if record.topic == self.cfg.events_topic:
            self._on_event(record)
        else:
            self._on_label(record)
        self._processed(record)

    def _processed(self, record) -> None:
        """Move `record`'s partition past it (its offset is committed at the next checkpoint)."""
        self.next_offsets[tp_key(record)] = record.offset + 1
        self.processed_this_run += 1
        self.since_checkpoint += 1

    def _on_event(self, record) -> None:
        try:
            event = decode_event(record.value, self.slot.check_label, self.cfg.max_record_bytes)
        except BadRecord as exc:
            return self._dead_letter(record, exc)
        self._serve_event(record, event)

    def _serve_event(self, record, event, predicted: tuple | None = None,
                     fields: dict | None = None) -> None:
        """Count, predict (unless `predicted`, its (prediction, probabilities) pair, is
        given), emit (with `fields`, see `_emit`) and learn or keep the decoded `event` of
        `record`."""
        self.stats.counts["events"] += 1
        self.events_this_run += 1
        try:
            y_pred, proba = predicted or self._predict(event.x)
        except Exception as exc:  # a model that raises on one event must not stop the daemon
            return self._refused(record, event, exc)
        self._emit(record, event, y_pred, proba, fields)
        self._after_prediction(record, event, y_pred, proba)

    def _after_prediction(self, record, event, y_pred, proba) -> None:
        """Learn the event now (its label came with it or before it) or keep it pending."""
        if not self.policy.learns:  # the learner learns the event; served without error
            self.model_failures = 0
            return
        now = self.pending.clock(record.timestamp)
        self._count_expired(self.pending.expire(now))
        self._count_orphans(self.early.expire(now))
        scored = proba if self.stats.uses_proba else y_pred
        others = ({name: c.predict(event.x) for name, c in self.challengers.items()}
                  if self.challengers else None)
        y = event.y
        if y is None:
            early = self.early.pop(event.id)
            if early is None:
                entry = Pending(event.x, scored, now, others=others)
                self._count_expired(self.pending.add(event.id, entry))
                self.model_failures = 0
                return
            y = early.y_pred  # its label came first: scored and learned now
        if change := self.stats.score(y, scored, None):  # delay statistics: late labels only
            self._changed(change, self.stats, self.slot, self.slot.name)
        if self._learn(record, event.x, y) and self.challengers:
            self._challengers_learn(event.x, y, scored, others, None)

    def _on_label(self, record) -> None:
        try:
            label = decode_label(record.value, self.slot.check_label, self.cfg.max_record_bytes)
        except BadRecord as exc:
            return self._dead_letter(record, exc)
        entry = self.pending.pop(label.id)
        if entry is None:  # its event has not come (yet): kept, bounded like pending events
            early = Pending({}, label.y, self.early.clock(record.timestamp))
            self._count_orphans(self.early.add(label.id, early))  # y_pred holds the label
            return
        delay = record.timestamp - entry.ts
        if change := self.stats.score(label.y, entry.y_pred, delay):
            self._changed(change, self.stats, self.slot, self.slot.name)
        if self._learn(record, entry.x, label.y) and self.challengers:
            self._challengers_learn(entry.x, label.y, entry.y_pred, entry.others, delay)

    def _challengers_learn(self, x: dict, y, served, others: dict | None,
                           delay_ms: int | None) -> None:
        """Score and teach every challenger a label the champion took; `served` is the
        champion's prediction of the event, `others` the challengers' (a challenger added since
        it came has none: not scored)."""
        others = others or {}
        for name, challenger in self.challengers.items():
            if change := challenger.score(y, others.get(name), delay_ms, served):
                self._changed(change, challenger.stats, challenger.slot, name)
            challenger.learn(x, y)
        if self._auto_promote_due():  # at this label: a restored learner promotes at the same one
            best = min((c for c in self.challengers.values() if c.duel.beats_at_alpha()),
                       key=lambda c: c.duel.p_value(), default=None)
            if best is not None:
                figures = best.duel.figures()
                self._promote_live(best.name, f"--auto-promote (better on {figures['better']}, "
                                   f"worse on {figures['worse']} of the last {figures['window']} "
                                   f"labels, p = {figures['p_value']:.3g})")

    def _auto_promote_due(self) -> bool:
        """--auto-promote, and --auto-promote-cooldown labels since the start or the last
        promotion (the served model's labels: its counts continue through a promotion); never
        while a version is pinned (an operator's rollback: models/pinning.py)."""
        return (self.cfg.auto_promote and self.control["pinned"] is None
                and (self.stats.counts["labelled"] - self.promoted_at
                     >= self.cfg.auto_promote_cooldown))

    def _changed(self, change: str, stats, slot, name: str) -> None:
        """Say that the drift watch of model `name` (its `stats` and `slot`: the served model's
        or a challenger's) found its errors rose (`change` "rise": a drift) or fell, and
        answer a drift as `--on-drift` says for that model: reset starts it afresh (the label
        that showed the drift is its first), challenger starts a fresh copy of the served
        model beside it (models/fresh.py)."""
        watch = stats.drift
        where = (f"{type(watch.detector).__name__}, model {name}, label "
                 f"{stats.counts['labelled']}, rolling {stats.in_words(rolling=True)}")
        if change == "fall":
            log.info("the errors fell (%s): not a drift", where)
            return
        reaction, answer = self._reaction(name), ""
        if reaction == "reset":
            slot.reset()
            answer = ": the model starts afresh (--on-drift reset)"
        elif reaction == "challenger" and slot is self.slot:
            answer = (f": challenger {self._start_fresh()} starts afresh beside it (--on-drift "
                      "challenger)")
        elif reaction == "challenger":
            answer = ": a challenger (--on-drift challenger answers drifts of the served model)"
        log.warning("drift %d: the errors rose (%s)%s", watch.rises, where, answer)

    def _predict(self, x: dict):
        return self.slot.predict(x, self._with_proba())

    def _with_proba(self) -> bool:
        # a daemon that emits nothing (the learner) and whose metric scores labels needs no
        # probabilities
        return self.policy.emits or self.stats.uses_proba

    def _learn(self, record, x: dict, y) -> bool:
        """Teach the model (x, y); False when it refused them (dead-lettered)."""
        try:
            self.slot.model.learn_one(x, y)
        except TooManyClassesError as exc:  # whoever writes labels would control our memory
            self._dead_letter(record, BadRecord("too_many_classes", str(exc)))
            return False
        except TooManyFeaturesError as exc:  # whoever writes events, likewise
            self._dead_letter(record, BadRecord("too_many_features", str(exc)))
            return False
        except (ValueError, TypeError) as exc:  # a label the checks let through
            self._dead_letter(record, BadRecord("label_rejected", f"{type(exc).__name__}: {exc}"))
            return False
        except Exception as exc:  # a broken model (e.g. a bad parameter only used by learn_one)
            self._model_error(record, exc)
            return False
        self.model_failures = 0
        self.stats.counts["learned"] += 1
        return True

    def _refused(self, record, event, exc: Exception) -> None:
        """Dead-letter `record`, whose prediction raised `exc`: as ``feature_rejected`` with the
        model's message when the event lacks a feature the model selects (KeyError, e.g. a
        pipeline's `compose.Select`) or has a value that is not a number the model refused (a
        string to a learner without categorical features), the record's fault, so not counted
        towards `MODEL_FAILURES_TO_STOP` (no stream of them stops the daemon); else as
        ``model_error``."""
        if isinstance(exc, KeyError) or isinstance(exc, (TypeError, ValueError)) and any(
                type(v) is not int and type(v) is not float for v in event.x.values()):
            return self._dead_letter(record, BadRecord("feature_rejected", _first_line(exc)))
        return self._model_error(record, exc)

    def _model_error(self, record, exc: Exception) -> None:
        """Dead-letter `record` as ``model_error``; stop after `MODEL_FAILURES_TO_STOP` records in
        a row ended in one (a record served without error resets the count)."""
        text = _first_line(exc)
        self._dead_letter(record, BadRecord("model_error", text))
        self.model_failures += 1
        if self.model_failures >= MODEL_FAILURES_TO_STOP:  # raised before any checkpoint or commit
            raise ModelError(f"model {self.slot.name} failed on {self.model_failures} records in "
                             f"a row (last: {text}); stopped without a checkpoint: the records "
                             "since the last one are served again at the next start")

    def _count_expired(self, entries: list) -> None:
        self.stats.counts["expired"] += len(entries)

    def _count_orphans(self, labels: list) -> None:
        self.stats.counts["orphan_labels"] += len(labels)

    def _emit(self, record, event, y_pred, proba, fields: dict | None = None) -> None:
        """Send the prediction record of `event`; `fields`: `_prediction_fields()`, given
        once for a batch (the model does not change within one)."""
        if not self.policy.emits:
            return  # the learner predicts for its metric only: the predictors emit
        if self.floors and self._replayed(record):
            return
        value = {
            "id": event.id,
            "prediction": y_pred,
            **(fields or self._prediction_fields()),
            "event_ts": event.ts if event.ts is not None else record.timestamp,
            "predicted_at_ms": int(time.time() * 1000),
            "source": {"partition": record.partition, "offset": record.offset},
        }
        if proba is not None:
            value["proba"] = {str(k): v for k, v in proba.items()}
        if shadow := self._shadow_models():
            value["shadow"] = {name: _shadow_prediction(model, event.x)
                               for name, model in shadow.items()}
        try:
            self.outputs.send(self.cfg.predictions_topic, encode_json(value), key=event.id.encode())
        except errors.RecordTooLarge as exc:  # e.g. a huge id, the proba of many classes
            self._dead_letter(record, BadRecord("output_rejected", f"prediction: {exc}"))

    def _shadow_models(self) -> dict:
        """The models whose predictions `--shadow` adds to a prediction record: here the
        challengers' (a predictor has those of its snapshot)."""
        if not self.cfg.shadow:
            return {}
        return {name: c.slot.model for name, c in self.challengers.items()}

    def _prediction_fields(self) -> dict:
        """The fields of a prediction record that name the model and the daemon."""
        return {"model": self.slot.name, "daemon": self.cfg.client_id, **self._model_fields()}

    def _model_fields(self) -> dict:
        """What a prediction record says about the model that made it."""
        return {"n_learned": self.stats.counts["learned"]}

    def _dead_letter(self, record, exc: BadRecord) -> None:
        self.stats.dead_letter(exc.reason)
        if self.floors and self._replayed(record):
            return
        if self.outputs.dead_letter(record, exc.reason, exc.detail):
            self.stats.counts["truncated_dead_letters"] += 1


def _shadow_prediction(model, x: dict):
    """A shadow model's prediction of `x`, None when it raises (the record goes on: only the
    served model's prediction is the record's)."""
    try:
        return model.predict_one(x)
    except Exception:  # noqa: BLE001 (a challenger's failure is never the record's)
        return None


def _first_line(exc: Exception) -> str:
    """`exc` in one line for a dead letter's detail: its type and its message's first line."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
