"""The daemons of a fault run: learners and predictors started, signalled and restarted.

`Fleet` runs `river-pa serve` processes through tests/kafka's `Kafka.serve_stream` (so the
command is the one the Kafka tests run: `python -m river_pa.connectors.cli ...`), each in a
slot named like its `--client-id`. A slot the harness killed or terminated is restarted after
the fault's delay; a daemon that exits on its own is restarted after a back-off (1, 2, 4, 8,
then 10 s, like Kubernetes' restart policy) and its exit is recorded as unexpected. Every exit
is kept with its status and cause, for the checker. `tick()` is called by the run's loop.

"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass, field

__all__ = ["ACTIVE", "Fleet", "Slot"]

ACTIVE = "active learner: holds the lease"
NOT_ACTIVE = ("stepping down, writing nothing more", "standby: the lease")
RESTARTED = "=== fault harness: restarted ==="
SESSION = ("--session-timeout-ms", "6000")
STALL_EXIT_S = 150  # --stall-exit-seconds: over the 60 s the loop's longest bounded wait takes
CHALLENGER = ("c", {"C": 0.1})  # the learners' challenger (checker.py replays it too)
EXTRA = ("x", 'PAClassifier{"C": 0.3}')  # the challenger the `models` fault adds (actions.py)
LEARNER = ("--role", "learn", "--max-poll-records", "25", "--checkpoint-every", "150",
           "--publish-every", "300", "--publish-seconds", "0.5",
           "--challenger", f"{CHALLENGER[0]}=PAClassifier{json.dumps(CHALLENGER[1])}")
# with --shards: no challenger (refused), the rounds every 300 labels (a few per fault), the
# tail mixed 2 s after a shard is read to its end
MIX_EVERY = 300
SHARDED = ("--role", "learn", "--max-poll-records", "25", "--checkpoint-every", "150",
           "--mix-every", str(MIX_EVERY), "--mix-seconds", "2")
PREDICTOR = ("--role", "predict", "--max-poll-records", "50", "--checkpoint-seconds", "0.5")


@dataclass
class Slot:
    """One daemon's place: its process now, and the record of its exits (status, cause)."""

    name: str
    role: str  # "learn" or "predict"
    proc: subprocess.Popen | None = None
    cause: str | None = None  # the signal the harness sent the running process, if any
    restart_at: float | None = None
    paused: bool = False
    exited: bool = False  # the exit of the current process is recorded
    retired: bool = False  # left the group for good
    exits: list[tuple[int, str]] = field(default_factory=list)
    unexpected: int = 0  # exits the harness did not cause


class Fleet:
    """The daemons serving `topics` (events, labels, predictions) with `extra` flags."""

    def __init__(self, kafka, topics: tuple[str, str, str], extra: tuple[str, ...],
                 shards: int = 1):
        self.kafka, self.topics, self.extra, self.shards = kafka, topics, extra, shards
        self.slots: dict[str, Slot] = {}
        self.learn_group, self.predict_group = f"{topics[0]}-learn", f"{topics[0]}-predict"

    # ---- starting and signalling -------------------------------------------------------

    def start(self, name: str, role: str) -> None:
        """Start a new slot (or the process of an existing one)."""
        slot = self.slots.setdefault(name, Slot(name, role))
        events, labels, preds = self.topics
        if slot.role == "learn":
            learner = LEARNER if self.shards == 1 else (*SHARDED, "--shards", str(self.shards))
            args = (events, labels, f"{events}-unused", *learner)
            group = self.learn_group
        else:
            args = (events, None, preds, *PREDICTOR)
            group = self.predict_group
        if slot.proc is not None:
            with open(self.kafka.tmp_path / f"{name}.log", "a") as log:
                log.write(f"\n{RESTARTED}\n")
        slot.proc = self.kafka.serve_stream(*args, *SESSION, "--stall-exit-seconds",
                                            str(STALL_EXIT_S), *self.extra, name=name, group=group)
        slot.cause, slot.restart_at, slot.paused, slot.exited = None, None, False, False

    def signal(self, name: str, sig: int, restart_after: float | None) -> None:
        """Send `sig` (SIGKILL or SIGTERM); restart the slot `restart_after` s after it exits
        (None: the member leaves for good)."""
        slot = self.slots[name]
        slot.cause = signal.Signals(sig).name
        slot.proc.send_signal(sig)
        if restart_after is None:
            slot.retired = True
        else:
            slot.restart_at = time.monotonic() + restart_after

    def pause(self, name: str) -> None:
        self.slots[name].proc.send_signal(signal.SIGSTOP)
        self.slots[name].paused = True

    def resume(self, name: str) -> None:
        self.slots[name].proc.send_signal(signal.SIGCONT)
        self.slots[name].paused = False

    # ---- the loop's bookkeeping --------------------------------------------------------

    def tick(self) -> None:
        """Record exits, and restart the slots that are due."""
        now = time.monotonic()
        for slot in self.slots.values():
            status = slot.proc.poll() if slot.proc is not None else None
            if status is not None and not slot.exited:
                slot.exited = True
                slot.exits.append((status, slot.cause or "unexpected"))
                if slot.cause is None:
                    slot.unexpected += 1
                    slot.restart_at = now + min(2 ** (slot.unexpected - 1), 10)
            if (status is not None and not slot.retired and slot.restart_at is not None
                    and now >= slot.restart_at):
                self.start(slot.name, slot.role)

    # ---- what is running ---------------------------------------------------------------

    def live(self, role: str) -> list[str]:
        """Names of the slots of `role` whose process runs (not paused, not leaving)."""
        return [s.name for s in self.slots.values() if s.role == role and not s.retired
                and not s.paused and s.cause is None and s.proc.poll() is None]

    def busy(self, name: str) -> bool:
        """A slot already under a fault (paused, signalled, or waiting for its restart)."""
        slot = self.slots[name]
        return slot.paused or slot.cause is not None or slot.proc.poll() is not None

    def active_learner(self) -> str | None:
        """The learner whose log last said it holds the lease (since its last start); with
        shards, the first of them."""
        return next(iter(self.active_learners()), None)

    def active_learners(self) -> list[str]:
        """Every learner whose log last said it holds a lease (one per shard)."""
        found = []
        for name in self.live("learn"):
            text = self.kafka.log(name).rsplit(RESTARTED, 1)[-1]
            last_active = text.rfind(ACTIVE)
            if last_active >= 0 and all(text.rfind(t) < last_active for t in NOT_ACTIVE):
                found.append(name)
        return found

    def healed(self) -> bool:
        """Every slot that should run is running, unpaused."""
        return all(s.retired or (not s.paused and s.proc.poll() is None and s.cause is None)
                   for s in self.slots.values())

    def stop_all(self, timeout_s: float = 60) -> dict[str, int | None]:
        """SIGTERM every running daemon at once; return each one's exit status (None if it
        did not exit in time: then it is killed)."""
        for slot in self.slots.values():
            slot.retired = True  # nothing is restarted any more
        running = [s for s in self.slots.values() if s.proc is not None and s.proc.poll() is None]
        for slot in running:
            if slot.paused:
                self.resume(slot.name)
            slot.cause = "final SIGTERM"
            slot.proc.send_signal(signal.SIGTERM)
        statuses = {}
        for slot in running:
            try:
                statuses[slot.name] = slot.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                statuses[slot.name] = None
                slot.proc.kill()
                slot.proc.wait()
        self.tick()
        return statuses
