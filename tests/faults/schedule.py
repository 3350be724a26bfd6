"""Seeded random fault schedules, triggered by progress rather than by the wall clock.

`Schedule.from_seed(seed, kinds=..., length=...)` draws `length` faults, each firing when the
run's progress (a fraction of the stream: events produced while the stream flows, labels
learned when it was all in Kafka before the daemons started) reaches `at`. The same seed, kinds
and length always give the same schedule; what a target resolves to ("the active learner", "the
coordinator of the predictors' group") is looked up when the fault fires. A schedule prints as
one line per fault, the line a violation message quotes.

Kinds (each switched on or off with `kinds=`):
  kill      SIGKILL a daemon; it is restarted `seconds` later (as Kubernetes would)
  term      SIGTERM a daemon; restarted `seconds` later
  pause     SIGSTOP a daemon, SIGCONT `seconds` later (past the 6 s session: a zombie)
  broker    stop one broker for `seconds`: the leader of the predictors' or learners' group
            coordinator partition, of the learners' transaction state partition, or any node
  members   a predictor joins, or one leaves for good (SIGTERM, never restarted)
  replay    re-send an earlier (signed) snapshot, chunks then manifest, to the state/model topic
  garbage   a manifest of random bytes, or a tombstone of the manifest, in the state/model topic
  pickle    a forged unsigned pickle (its unpickling creates a marker file) with a matching
            manifest in the state/model topic
  limit     lower the predictions topic's max.message.bytes for `seconds`
  promote   a control record (`river-pa models promote`): the challenger, or the former served
            model back, or a forged one (another key; not JSON when the run is unsigned)
  pin       a control record (`river-pa models pin`) of the model topic's oldest version, and
            one that unpins `seconds` later
  models    a control record (`river-pa models add`) of another challenger (with `--backfill`
            or not), and one that removes it `seconds` later (or none: it stays)

"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["KINDS", "Fault", "Schedule"]

KINDS = ("kill", "term", "pause", "broker", "members", "replay", "garbage", "pickle", "limit",
         "promote", "pin", "models")
DAEMONS = ("learner:active", "learner:standby", "predictor:0", "predictor:1", "predictor:2")
BROKERS = ("broker:predict-coordinator", "broker:learn-coordinator", "broker:lease-coordinator",
           "broker:learner-txn", "broker:1", "broker:2", "broker:3")
SECONDS = {"kill": (0.5, 8), "term": (0.5, 8), "pause": (1, 12), "broker": (3, 20),
           "members": (0, 0), "replay": (0, 0), "garbage": (0, 0), "pickle": (0, 0),
           "limit": (3, 15), "promote": (0, 0), "pin": (2, 15), "models": (2, 15)}


@dataclass(frozen=True)
class Fault:
    """One fault: fire `kind` on `target` at progress `at` (0-1), lasting `seconds`."""

    at: float
    kind: str
    target: str
    seconds: float

    def line(self) -> str:
        lasting = f" for {self.seconds:.1f} s" if self.seconds else ""
        return f"at {self.at:.2f}: {self.kind} {self.target}{lasting}"


def _target(rng: random.Random, kind: str) -> str:
    if kind in ("kill", "term", "pause"):
        return rng.choice(DAEMONS)
    if kind == "broker":
        return rng.choice(BROKERS)
    if kind == "members":
        return rng.choice(("join", "leave"))
    if kind == "garbage":
        return f"{rng.choice(('state', 'model'))}:{rng.choice(('bytes', 'tombstone'))}"
    if kind in ("replay", "pickle"):
        return rng.choice(("state", "model"))
    if kind == "promote":
        return rng.choice(("challenger", "challenger", "former", "forged"))  # former: back
    if kind == "pin":
        return "model:oldest"
    if kind == "models":
        return rng.choice(("add", "add-backfill", "add-kept"))  # kept: never removed
    return "predictions"  # limit


@dataclass
class Schedule:
    """A seed's faults, in firing order, and the run's settings drawn from it: whether the
    stream flows while the faults fire (`live`) or was all in Kafka before (exact model
    comparison), and whether the daemons sign their checkpoints (`signed`); `shards` is the
    learners' `--shards` (given, not drawn: a learner more than the shards stands by)."""

    seed: int
    faults: list[Fault] = field(default_factory=list)
    live: bool = False
    signed: bool = True
    kinds: tuple = KINDS
    shards: int = 1  # the learners' --shards (not drawn: the caller's)

    @classmethod
    def from_seed(cls, seed: int, kinds=KINDS, length: int = 4, live: bool | None = None,
                  signed: bool | None = None, shards: int = 1) -> "Schedule":
        unknown = set(kinds) - set(KINDS)
        if unknown or not kinds:
            raise ValueError(f"kinds: {sorted(unknown) or 'none given'}; known: {', '.join(KINDS)}")
        rng = random.Random(seed)
        drawn_live, drawn_signed = rng.random() < 0.5, rng.random() < 0.5
        ats = sorted(round(rng.uniform(0.05, 0.85), 2) for _ in range(length))
        faults = []
        for at in ats:
            kind = rng.choice(sorted(kinds))
            low, high = SECONDS[kind]
            faults.append(Fault(at, kind, _target(rng, kind), round(rng.uniform(low, high), 1)))
        return cls(seed, faults, drawn_live if live is None else live,
                   drawn_signed if signed is None else signed, tuple(kinds), shards)

    def lines(self) -> str:
        head = (f"seed {self.seed}: stream {'flowing' if self.live else 'all in Kafka first'}, "
                f"checkpoints {'signed' if self.signed else 'unsigned'}, {len(self.faults)} faults"
                + (f", {self.shards} shards" if self.shards > 1 else ""))
        return "\n".join([head] + [f"  {f.line()}" for f in self.faults])
