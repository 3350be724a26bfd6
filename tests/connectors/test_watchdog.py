"""connectors/observe/metrics.py's `Watchdog`, in a process of its own (it ends the process): a loop
that stops stepping is ended with status 70 and its stacks; a process paused longer than the
limit (SIGSTOP, a VM) is not ended when it resumes and steps again."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

LOOP = """
import sys, time, types
from pathlib import Path
from river_pa.connectors.observe.metrics import Health, Watchdog

health, stop = Health(), Path(sys.argv[1])
dog = Watchdog(1.0)
dog.daemon = types.SimpleNamespace(health=health)
dog.start()
health.beat = time.monotonic()
print("stepping", flush=True)
while not stop.exists():  # the loop: a step every 50 ms until told to stop stepping
    health.beat = time.monotonic()
    time.sleep(0.05)
print("stuck", flush=True)
time.sleep(600)
"""

PAUSE_S = 4.0  # four times the limit


def start(tmp_path):
    stop = tmp_path / "stop"
    proc = subprocess.Popen([sys.executable, "-c", LOOP, str(stop)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "stepping\n", proc.stderr.read()
    return proc, stop


def idle_reported(stderr: str) -> float:
    found = re.search(r"no step of the loop for ([\d.]+) s \(--stall-exit-seconds 1\)", stderr)
    assert found, stderr
    return float(found.group(1))


def test_a_loop_that_stops_stepping_is_ended_with_status_70_and_its_stacks(tmp_path):
    proc, stop = start(tmp_path)
    stop.touch()
    assert proc.wait(timeout=60) == 70
    stderr = proc.stderr.read()
    assert 1.0 <= idle_reported(stderr) < PAUSE_S
    assert re.search(r"line \d+ in <module>", stderr)  # the main thread's stack, in its sleep


def test_a_process_paused_past_the_limit_is_not_ended_when_it_resumes(tmp_path):
    proc, stop = start(tmp_path)
    proc.send_signal(signal.SIGSTOP)
    time.sleep(PAUSE_S)  # the fault itself: a pause four times the limit
    stop.touch()  # the loop makes no step after the resume: only the resume may count
    proc.send_signal(signal.SIGCONT)
    assert proc.wait(timeout=60) == 70
    # ended a limit after the resume, not at it: the idle time it gives is not the pause's
    assert idle_reported(proc.stderr.read()) < PAUSE_S
