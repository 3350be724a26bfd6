"""Long soaks of the fault harness: many seeded schedules, totals, and how to reproduce.

    python -m tests.faults.soak --seeds 50 [--first N] [--kinds kill,term,...]
                                [--length 4] [--exactly-once on|off|both]
                                [--client kafka-python|confluent] [--shards N]
    python -m tests.faults.soak --seed 17 --exactly-once on     # one seed, to reproduce

Starts the 3-broker cluster of scripts/kafka.sh when it is not up (stopped again at the end),
runs each seed with the same code as tests/faults/test_faults.py, prints one line per run as
it ends, then the totals: schedules run, faults injected by kind, and each violation in full
with the command that reproduces it. Exit status 1 when a violation was found.

"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.faults.runner import N_EVENTS, run_schedule
from tests.faults.schedule import KINDS, Schedule
from tests.kafka.conftest import CLIENTS, ELEC2, SCRIPT, broker_script


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds (default 1)")
    parser.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--seed", type=int, help="run this one seed only")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"comma-separated fault kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--length", type=int, default=4, help="faults per schedule (default 4)")
    parser.add_argument("--exactly-once", choices=("on", "off", "both"), default="both")
    parser.add_argument("--events", type=int, default=N_EVENTS, help="events in the stream")
    parser.add_argument("--client", choices=CLIENTS, default=CLIENTS[0],
                        help="the daemons' --kafka-client (default kafka-python)")
    parser.add_argument("--shards", type=int, default=1,
                        help="the learners' --shards (default 1: one learner and a standby)")
    args = parser.parse_args(argv)
    args.kinds = tuple(k for k in args.kinds.split(",") if k)
    try:  # an unknown kind: one line, before any broker starts
        Schedule.from_seed(0, args.kinds)
    except ValueError as exc:
        parser.error(f"--kinds: {exc}")
    return args


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    args = parse(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):  # a soak in the background: stopped cleanly,
        signal.signal(sig, _interrupt)           # its daemons killed, the totals printed
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    modes = {"on": [True], "off": [False], "both": [False, True]}[args.exactly_once]
    started = subprocess.run(["bash", str(SCRIPT), "cluster-status"],
                             capture_output=True).returncode != 0
    bootstrap = broker_script("cluster-start").splitlines()[-1]
    runs, fired, failing, stalls = 0, Counter(), [], 0
    try:
        for seed in seeds:
            schedule = Schedule.from_seed(seed, args.kinds, args.length, shards=args.shards)
            for exactly_once in modes:
                result = run_one(schedule, exactly_once, bootstrap, args)
                runs += 1
                fired += result.fired
                stalls += result.stalls
                if result.violations:
                    failing.append(result)
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc}): the totals so far", flush=True)
    finally:
        print(f"\n{runs} schedules run; faults injected by kind: {dict(sorted(fired.items()))}; "
              f"{sum(len(r.violations) for r in failing)} violations in {len(failing)} runs; "
              f"{stalls} daemons ended by their watchdog (status 70) and restarted", flush=True)
        for result in failing:
            print(f"  {len(result.violations)} violations: {result.message.splitlines()[-1]}")
        if started:
            broker_script("cluster-stop")
    return 1 if failing else 0


def run_one(schedule: Schedule, exactly_once: bool, bootstrap: str, args):
    """Run one schedule, print its line (and its violations in full) as soon as it ends."""
    work = Path(tempfile.mkdtemp(prefix=f"river-pa-faults-seed{schedule.seed}-"))
    result = run_schedule(schedule, exactly_once, bootstrap, work, ELEC2, args.events,
                          args.client)
    if not result.violations:  # kept otherwise: the daemons' logs and reports
        shutil.rmtree(work)
    print(f"seed {schedule.seed} exactly-once {'on' if exactly_once else 'off'} client "
          f"{args.client}: "
          f"{sum(result.fired.values())} faults {dict(result.fired)} ({result.skipped} skipped), "
          f"{len(result.violations)} violations, {result.stalls} watchdog exits, "
          f"{result.seconds:.0f} s", flush=True)
    if args.seed is not None:
        print("\n".join(result.log), flush=True)
    if result.violations:
        print("\n" + result.message + "\n", flush=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
