"""Control records: commands to a running deployment, written by `river-pa models` to its
compacted control topic (`--control-topic`, default '<events_topic>.control', one partition)
and obeyed by the learner (and `--role both`) between two batches.

A record is keyed by its command (`add` and `remove` by the command and the model: compaction
keeps the newest of each, so the topic holds the deployment's current intent) and holds JSON
``{"command": "promote", "model": NAME, "issued_at_ms": ..., "by": ...}`` (`pin` also has
``"version": V``, a version of the model topic; `add` has ``"spec": SPEC`` and ``"backfill"``,
models/live.py;
`unpin` names no model: ``""``); with a `--checkpoint-key` it is signed like a checkpoint
(HMAC-SHA256 of the value in the header ``hmac``), and an unsigned or badly signed one is
skipped: whoever can write the topic would otherwise choose the served model. The record names
the control topic it was issued for (signed with it: a copy in another deployment's topic is
refused there) and the offset it was issued for (the topic's end when `river-pa models` wrote
it): a record written at another offset is refused, whether a copy or overtaken by another
command (which `models promote` then writes again); a record without one (of an earlier
river-pa) is refused when issued no later than the last one obeyed. The learner keeps the
offset after the last record it obeyed, and that record's `issued_at_ms`, in its state, so a
restored learner (a failover, a rollback with `--exactly-once`) obeys each record once, and a
learner of a new group obeys the topic's newest intent. Kafka has no such mechanism (Kafka
Streams applications use a control topic the same way), hence this module.

"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import logging
import socket
import time

from river_pa.connectors.kafka import errors
from river_pa.connectors.kafka.partitions import TopicPartition

__all__ = ["COMMANDS", "ControlFollowing", "ControlReader", "decode", "encode"]

log = logging.getLogger("river_pa.serve")

COMMANDS = ("promote", "pin", "unpin", "add", "remove")
MAX_VALUE_BYTES = 4096  # a longer record is no command of ours
INVALID_LINES = 20  # lines for skipped control records; then one per power of ten
READ_TO_END_S = 30  # reading the control topic to its end at a start or a restore
RECENT = 20  # control records whose outcome the report gives (several can come in one batch)


def _signature(key: bytes, value: bytes) -> str:
    return hmac.new(key, value, hashlib.sha256).hexdigest()


def encode(command: str, model: str, key: bytes | None, topic: str, at: int | None = None,
           version: int | None = None, spec: str | None = None,
           backfill: bool = False) -> tuple[bytes, bytes, list]:
    """(key, value, headers) of the control record `command` for model `model` (and, for
    `pin`, its `version` in the model topic; for `add`, its `spec` and whether to `backfill`
    it), for the
    deployment whose control topic is `topic` (signed with it: a record copied to another
    deployment's topic is refused there), to be written at offset `at` of that topic (its end
    when issued: a copy at another offset is refused, and so is a record another command got
    ahead of; None: ordered by the issuer's clock, as records of river-pa before it).

    >>> k, v, h = encode("promote", "c01", b"secret", "events.control")
    >>> k, json.loads(v)["model"], decode(v, h, b"secret", "events.control")["command"]
    (b'promote', 'c01', 'promote')
    >>> decode(v, h, b"other", "events.control")
    'its HMAC does not verify (another --checkpoint-key, or a forged record)'
    >>> decode(v, h, b"secret", "other.control")
    "it was issued for the control topic 'events.control'"

    """
    if command not in COMMANDS:
        raise ValueError(f"command must be one of {', '.join(COMMANDS)}, got {command!r:.40}")
    fields = {"command": command, "model": model, "topic": topic,
              "issued_at_ms": int(time.time() * 1e3),
              "by": f"{getpass.getuser()}@{socket.gethostname()}"}
    if command == "pin":
        fields["version"] = version
    if command == "add":
        fields.update(spec=spec, backfill=backfill)
    value = json.dumps(fields if at is None else {**fields, "at": at}).encode()
    headers = [("hmac", _signature(key, value).encode())] if key else []
    key_text = f"{command}/{model}" if command in ("add", "remove") else command
    return key_text.encode(), value, headers


def decode(value: bytes | None, headers, key: bytes | None, topic: str) -> dict | str:
    """The command of a control record of `topic` (a dict with `command`, `model` and
    `issued_at_ms`), or the reason it is not one (a string)."""
    if value is None:
        return "a tombstone"
    if len(value) > MAX_VALUE_BYTES:
        return f"{len(value)} bytes, above {MAX_VALUE_BYTES}"
    signature = dict(headers or []).get("hmac")
    if key and not (isinstance(signature, bytes) and hmac.compare_digest(
            signature, _signature(key, value).encode())):
        return ("unsigned, and a --checkpoint-key is configured" if signature is None else
                "its HMAC does not verify (another --checkpoint-key, or a forged record)")
    try:
        command = json.loads(value)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "not JSON"
    if not (isinstance(command, dict) and command.get("command") in COMMANDS
            and isinstance(command.get("model"), str)
            and type(command.get("issued_at_ms")) is int
            and (command.get("at") is None or type(command["at"]) is int)):
        return f"no command of {', '.join(COMMANDS)} with a model name and issued_at_ms"
    if command["command"] == "pin" and not (type(command.get("version")) is int
                                            and command["version"] > 0):
        return f"a pin without a version > 0: {command.get('version')!r:.40}"
    if command["command"] == "add" and not isinstance(command.get("spec"), str):
        return f"an add without a model spec: {command.get('spec')!r:.40}"
    if command["command"] == "add" and type(command.get("backfill", False)) is not bool:
        return f"an add whose backfill is not true or false: {command.get('backfill')!r:.40}"
    if command.get("topic") != topic:
        return f"it was issued for the control topic {command.get('topic')!r:.80}"
    return command


OVERTAKEN = "another command was written first"  # `river-pa models promote` writes it again


def _in_order(command: dict, offset: int, last_issued_ms: int) -> dict | str:
    """`command`, written at `offset`, or why it is refused: written elsewhere than at the
    offset it was issued for (a copy, or `OVERTAKEN`); without one, issued no later than the
    last command obeyed (by river-pa's clock-ordered records of before)."""
    at = command.get("at")
    if at is None:
        return command if command["issued_at_ms"] > last_issued_ms else \
            "issued no later than the last command obeyed (a replayed record)"
    if at != offset:
        return f"issued for offset {at}, written at {offset}: {OVERTAKEN}, or it is a copy"
    return command


class ControlReader:
    """Reads partition 0 of the control topic from an offset, without a consumer group."""

    def __init__(self, consumer, topic: str):
        self.consumer, self.tp = consumer, TopicPartition(topic, 0)
        consumer.assign([self.tp])

    def seek(self, offset: int) -> None:
        self.consumer.seek(self.tp, offset)

    def poll(self) -> list:
        """The records fetched since the last call (none waited for)."""
        return self.consumer.poll(0).get(self.tp, [])

    def read_to_end(self, timeout_s: float) -> list:
        """The records from the position to the topic's end now (those fetched within
        `timeout_s`)."""
        end = self.consumer.end_offsets([self.tp])[self.tp]
        records, deadline = [], time.monotonic() + timeout_s
        while self.consumer.position(self.tp) < end and time.monotonic() < deadline:
            records += self.consumer.poll(200).get(self.tp, [])
        return records

    def close(self) -> None:
        self.consumer.close(autocommit=False)


class ControlFollowing:
    """The daemon's side (a daemon that learns and has challengers): read the control topic
    between two batches and obey each record once (`_promote_live`, state/recovery.py)."""

    control_reader: ControlReader | None = None
    invalid_control = 0
    # what became of the last RECENT control records this run handled, {offset: outcome}: in
    # the report, where `river-pa models promote --wait` reads what became of its record
    control_recent: dict | None = None

    def _start_control(self) -> None:
        """Open the reader (the topic created if missing) when this daemon learns and has
        challengers (to promote, add or remove: models/live.py; or will have: models/fresh.py)
        or publishes versions (to pin: models/pinning.py): the learner always, `--role both`
        with a --challenger or `--on-drift challenger` (a daemon of a deployment that uses no
        command needs no right to the topic)."""
        if not (self.policy.learns and self.cfg.control_topic
                and (self.challengers or self.policy.publishes or self._makes_fresh())):
            return
        from river_pa.connectors.kafka.admin import ensure_topic

        ensure_topic(self.cfg, self.cfg.control_topic)
        self.control_reader = ControlReader(self.client.make_offsets_client(self.cfg),
                                            self.cfg.control_topic)
        self.control_seek = True

    def _follow_control(self) -> bool:
        """Obey the control records written since the last one obeyed (the state's offset:
        after a restore, from there again); whether there was any."""
        reader = self.control_reader
        if reader is None:
            return False
        if self.control_seek:  # at a start or a restore: every record written so far, before
            reader.seek(self.control["offset"])  # the first publish (a pin holds from it)
            self.control_seek = False
            try:
                records = reader.read_to_end(READ_TO_END_S)
            except errors.ClientError as exc:  # a broker restarting: read from the next step
                log.warning("%s not read to its end (%s)", self.cfg.control_topic, exc)
                records = reader.poll()
        else:
            records = reader.poll()
        for record in records:
            command = decode(record.value, record.headers, self.key, self.cfg.control_topic)
            if not isinstance(command, str):
                command = _in_order(command, record.offset, self.control["issued"])
            self.control["offset"] = record.offset + 1
            self.since_checkpoint = max(self.since_checkpoint, 1)  # the offset is state
            if isinstance(command, str):
                self._invalid_control(record.offset, command)
                outcome = f"skipped: {command}"
            else:
                self.control["issued"] = command["issued_at_ms"]
                outcome = self._obey(command, record.offset)
            recent = self.control_recent = self.control_recent or {}
            recent[str(record.offset)] = outcome  # a JSON object's keys
            if len(recent) > RECENT:
                del recent[next(iter(recent))]
        return bool(records)

    def _obey(self, command: dict, offset: int) -> str:
        """Carry out `command`; what became of it, in a few words."""
        by = command.get("by")
        where = f"control record {offset} of {self.cfg.control_topic}" + (
            f" (by {by!r:.80})" if by is not None else "")
        try:
            return self._carry_out(command, where)
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:  # never a loop
            log.warning("%s: %s %.80s failed: %.200s; nothing changes", where,
                        command["command"], command["model"], exc)
            return f"failed: {str(exc):.200}"

    def _carry_out(self, command: dict, where: str) -> str:
        if self.cfg.shards > 1:  # each shard would decide apart (connectors/shards/)
            log.warning("%s: %s %.80s refused: the learners run --shards %d, which serve one "
                        "mixed model", where, command["command"], command["model"],
                        self.cfg.shards)
            return f"refused: the learners run --shards {self.cfg.shards}"
        if command["command"] == "pin":
            return self._pin(command["model"], command["version"], where)
        if command["command"] == "unpin":
            return self._unpin(where)
        if command["command"] == "add":
            return self._add(command["model"], command["spec"], where,
                             command.get("backfill") is True)
        if command["command"] == "remove":
            return self._remove(command["model"], where)
        return self._promote_command(command["model"], where)

    def _promote_command(self, name: str, where: str) -> str:
        if name == self.slot.name:
            log.info("%s: promote %r: it is the served model already", where, name)
            return "the served model already"
        if name not in self.challengers:
            log.warning("%s: promote %.80r: no model of that name (the served model is %r, the "
                        "challengers %s); nothing changes", where, name, self.slot.name,
                        ", ".join(map(repr, sorted(self.challengers))))
            return "no model of that name"
        self._promote_live(name, where)
        return "promoted"

    def _invalid_control(self, offset: int, reason: str) -> None:
        self.invalid_control += 1
        n = self.invalid_control
        if n <= INVALID_LINES or str(n).strip("0") == "1":
            log.warning("control record %d of %s skipped: %s (%d so far%s)", offset,
                        self.cfg.control_topic, reason, n, "" if n < INVALID_LINES else
                        "; then one line per power of ten")
