"""One fault run: a seeded schedule fired at a learner, a standby and predictors on the cluster.

`run_schedule` creates fresh topics (3 partitions, replicated 3 times), sends the stream (all
before the daemons start, or paced while the faults fire), starts learners `la` (active) and
`lb` (standby; with the schedule's N shards, `la` to `l<N+1>`: N active, one standby) and
predictors `p1`, `p2`, fires each fault when progress reaches it (or, if
progress stalls, `STALL_S` after the previous one: the stall is itself what the checker
reports), waits for every fault to end, heals (every broker up, every daemon running), then
hands over to the checker. The pytest module and the soak both call it. `client` is the
daemons' `--kafka-client`.

"""

from __future__ import annotations

import contextlib
import secrets
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kafka import KafkaProducer

from river_pa.connectors.observe.metrics import STALLED
from tests.faults import actions, checker
from tests.faults.cluster import Cluster
from tests.faults.daemons import ACTIVE, Fleet
from tests.faults.schedule import Schedule
from tests.faults.stream import RATE, Flow, Stream
from tests.kafka.conftest import Kafka, broker_script

__all__ = ["Result", "run_schedule"]

N_EVENTS = 1_500
STALL_S = 60  # a fault whose progress never comes fires this long after the previous one
START_S = 300  # the first learner to hold the lease (a frozen one exits after STALL_EXIT_S)


@dataclass
class Result:
    """What a run did and found."""

    schedule: Schedule
    exactly_once: bool
    client: str = "kafka-python"  # the daemons' --kafka-client
    fired: Counter = field(default_factory=Counter)  # faults carried out, by kind
    skipped: int = 0  # faults whose target was busy or missing when they came due
    log: list[str] = field(default_factory=list)  # one line per thing done, with its time
    violations: list[str] = field(default_factory=list)  # one line each
    message: str = ""  # the violations with the seed, schedule, log and reproduce command
    stalls: int = 0  # daemons the watchdog ended (status 70: no step for --stall-exit-seconds)
    seconds: float = 0.0


class Run:
    """The state of one run, shared by the loop, the actions and the checker."""

    def __init__(self, schedule: Schedule, exactly_once: bool, bootstrap: str, workdir: Path,
                 elec2_path, n_events: int, client: str = "kafka-python"):
        self.schedule, self.exactly_once = schedule, exactly_once
        broker_script("cluster-start")  # every node up, whatever an interrupted run left
        self.cluster = Cluster(bootstrap)
        self.kafka = Kafka(bootstrap, workdir, replication=3, client=client)
        self.topics = tuple(self.kafka.topics("events", "labels", "preds", partitions=3))
        self.stream = Stream(elec2_path, n_events)
        self.key = secrets.token_hex(32) if schedule.signed else None
        self.marker = workdir / "FORGED-PICKLE-RAN"
        self.forged: set[str] = set()  # SHA-256 of the forged pickles written
        extra = (("--exactly-once",) if exactly_once else ()) + (
            ("--checkpoint-key", self.key) if self.key else ())
        self.fleet = Fleet(self.kafka, self.topics, extra, schedule.shards)
        self.result = Result(schedule, exactly_once, client)
        self.started = time.monotonic()
        self.timers: list[tuple[float, object, str]] = []
        self.threads: list[tuple[threading.Thread, str]] = []
        self.flow: Flow | None = None
        self.errors: list[str] = []  # what the background actions raised

    # ---- services for the actions ------------------------------------------------------

    def note(self, text: str) -> None:
        self.result.log.append(f"{time.monotonic() - self.started:7.1f}s {text}")

    def later(self, seconds: float, action, what: str) -> None:
        self.timers.append((time.monotonic() + seconds, action, what))

    def in_background(self, action, what: str) -> None:
        def guarded():
            try:
                action()
            except BaseException as exc:  # noqa: BLE001 (the run reports it)
                self.errors.append(f"{what}: {exc!r}")
        thread = threading.Thread(target=guarded, daemon=True, name=what)
        thread.start()
        self.threads.append((thread, what))

    def broker_busy(self) -> bool:
        return any(t.is_alive() for t, what in self.threads if what.startswith("broker"))

    @staticmethod
    def wait_seconds(seconds: float) -> None:
        time.sleep(seconds)  # a fault's drawn duration: the one wall-clock wait by design

    # ---- progress and the loop ---------------------------------------------------------

    def learned(self) -> int:
        """The labels the active learner's last report says it learned (0 if none yet); with
        shards, the sum over the shards' active learners."""
        total = 0
        for name in self.fleet.active_learners()[:self.schedule.shards]:
            try:
                total += self.kafka.last_report(f"{name}.jsonl")["learned"]
            except (OSError, ValueError, IndexError, KeyError):  # no report yet, a line being
                pass                                              # written
        return total

    def progress(self) -> float:
        n = self.stream.n_events
        return (self.flow.events_sent if self.flow else self.learned()) / n

    def tick(self) -> None:
        """Restart daemons that are due, end the faults whose time is up."""
        self.fleet.tick()
        now = time.monotonic()
        for timer in [t for t in self.timers if t[0] <= now]:
            self.timers.remove(timer)
            try:
                timer[1]()
                self.note(timer[2])
            except Exception as exc:  # noqa: BLE001 (retried on the next tick)
                self.note(f"{timer[2]} failed ({exc!r}); retrying")
                self.timers.append((now + 1, timer[1], timer[2]))

    def busy(self) -> bool:
        return bool(self.timers) or any(t.is_alive() for t, _ in self.threads) or any(
            s.cause is not None and not s.retired and s.restart_at is not None
            for s in self.fleet.slots.values())  # a restart the harness caused, still due

    def fire_all(self) -> None:
        last = time.monotonic()
        for fault in self.schedule.faults:
            while self.progress() < fault.at and time.monotonic() - last < STALL_S:
                self.tick()
                time.sleep(0.2)
            stalled = "" if self.progress() >= fault.at else f" (progress stalled at {self.progress():.2f})"
            try:
                did = actions.fire(self, fault)
            except Exception as exc:  # noqa: BLE001 (an admin call failed: a broker moving)
                did = f"skipped: {exc!r}"
            self.note(f"{fault.line()}{stalled}: {did}")
            if did.startswith("skipped"):
                self.result.skipped += 1
            else:
                self.result.fired[fault.kind] += 1
            last = time.monotonic()

    def start(self) -> None:
        """Stream (unless it flows later), learner la until it holds the lease, lb, p1, p2."""
        events, labels, _ = self.topics
        producer = KafkaProducer(bootstrap_servers=self.cluster.bootstrap, acks="all", linger_ms=5)
        self.flow = Flow(producer, self.stream, events, labels, RATE if self.schedule.live else 0)
        if not self.schedule.live:  # all of it, acknowledged, before any daemon starts
            self.flow.start()
            self.flow.finish()
            self.flow = None
        self.fleet.start("la", "learn")
        deadline = time.monotonic() + START_S
        while self.fleet.active_learner() != "la":  # la restarted if it exits (the watchdog)
            if time.monotonic() > deadline:  # its threads' stacks into its log (connectors/cli.py)
                proc = self.fleet.slots["la"].proc
                if proc.poll() is None:
                    proc.send_signal(signal.SIGUSR1)
                    with contextlib.suppress(AssertionError):
                        self.kafka.wait_for_log("la", "most recent call first", proc, 10)
                raise AssertionError(f"la never logged {ACTIVE!r} (exits {self.fleet.slots['la'].exits})")
            self.fleet.tick()
            time.sleep(0.2)
        learners = [f"l{chr(ord('b') + i)}" for i in range(self.schedule.shards)]  # a standby
        for name, role in ((n, "learn") for n in learners):
            self.fleet.start(name, role)
        for name in ("p1", "p2"):
            self.fleet.start(name, "predict")
        if self.flow is not None:
            self.flow.start()
        self.note(f"started la (active), {', '.join(learners)}, p1, p2")

    def heal(self) -> None:
        """Wait for every fault to end, then bring every broker up and every daemon back."""
        while self.busy():
            self.tick()
            time.sleep(0.2)
        if self.flow is not None:
            self.flow.finish()
        broker_script("cluster-start")  # every node running and in the cluster
        self.fleet.tick()
        self.healed_at = time.monotonic()
        self.note("healed: every broker up, every daemon running, no fault left")

    def close(self) -> None:
        """Kill the daemons, then delete the run's topics (a long soak shares the cluster)."""
        self.kafka.close()
        for slot in self.fleet.slots.values():
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.kill()
                slot.proc.wait()
        try:
            self.kafka.delete_topics()
        except Exception as exc:  # noqa: BLE001 (cleanup: must not hide what ended the run)
            self.note(f"topics not deleted: {exc!r}")


def run_schedule(schedule: Schedule, exactly_once: bool, bootstrap: str, workdir: Path,
                 elec2_path, n_events: int = N_EVENTS, client: str = "kafka-python") -> Result:
    """Run `schedule` (the daemons on `client`) and check the invariants; the result holds the
    violations found."""
    run = Run(schedule, exactly_once, bootstrap, Path(workdir), elec2_path, n_events, client)
    try:
        try:
            run.start()
        except AssertionError as exc:  # no learner: a violation, the soak goes on
            run.result.violations = [f"progress at the start: {exc} in {START_S} s"]
            run.result.message = checker.message(run, run.result.violations)
            return run.result
        run.fire_all()
        run.heal()
        run.result.violations = checker.check(run)
        run.result.violations += [f"harness error in {e}" for e in run.errors]
        if run.result.violations:
            run.result.message = checker.message(run, run.result.violations)
    finally:
        run.close()
        run.result.seconds = time.monotonic() - run.started
        run.result.stalls = sum(status == STALLED for slot in run.fleet.slots.values()
                                for status, _ in slot.exits)
    return run.result
