"""Replay Elec2 (45,312 events) into Kafka with labels delayed by N events.

    python examples/produce_elec2.py --bootstrap 127.0.0.1:19092 --events events \
        --labels labels --delay 100 [--limit 5000] [--rate 2000] [--data phishing]

`--data` is Elec2's elec.csv.gz (default: the shared data folder's, see `river-pa evaluate
elec2`), a data set name `river-pa evaluate` takes, e.g. `phishing` (River's bundled
Phishing, 1,250 events, no download), or `agrawal`: River's Agrawal generator (function 2,
seed 42; 5,000 events unless `--limit`) with its categorical columns (education level, car
make, zip code) as strings, e.g. `{"elevel": "e2", "car": "c8", "zipcode": "z3", ...}`, for
a pipeline with categorical features (examples/categorical_pipeline.py).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

from kafka import KafkaProducer

# the installed package (`pip install .`): the source tree's river_pa/ has no connectors
from river_pa.connectors.replay import elec2, records, send_all
from river_pa.evaluate.datasets import load, shared_folder

DEFAULT_DATA = shared_folder() / "elec2" / "elec.csv.gz"


def build_parser() -> argparse.ArgumentParser:
    """The producer's command-line flags."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--bootstrap", default=os.environ.get("RIVER_PA_KAFKA_BOOTSTRAP", "127.0.0.1:19092"))
    parser.add_argument("--data", default=os.environ.get("ELEC2_PATH", str(DEFAULT_DATA)),
                        help="Elec2's elec.csv.gz, or a data set name of river-pa evaluate, e.g. "
                        "phishing")
    parser.add_argument("--events", default="events")
    parser.add_argument("--labels", default="labels")
    parser.add_argument("--delay", type=int, default=100, help="label delay in events; -1 sends y inline")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rate", type=float, default=0, help="events per second (0: as fast as possible)")
    return parser


def rows(data: str, limit: int | None) -> list[tuple[dict, object]]:
    """The (features, label) rows of `data`: Elec2's file, or a data set name that
    `river-pa evaluate` takes (read by its loader: `river.datasets` imports scikit-learn and
    SciPy, seconds of start-up)."""
    if Path(data).is_file():
        return elec2(data, limit)
    if data == "agrawal":
        return agrawal(limit or 5_000)
    try:
        loaded = load(data)
    except ValueError as exc:  # an unknown name, a missing file: one line naming the choices
        raise SystemExit(f"produce_elec2.py: --data {data}: {exc}") from None
    return list(itertools.islice(zip(loaded.x, loaded.y), limit))


def agrawal(n: int) -> list[tuple[dict, bool]]:
    """`n` events of River's Agrawal generator, its categorical columns as strings."""
    from river.datasets import synth

    prefix = {"elevel": "e", "car": "c", "zipcode": "z"}
    return [({k: f"{prefix[k]}{v}" if k in prefix else v for k, v in x.items()}, bool(y))
            for x, y in synth.Agrawal(classification_function=2, seed=42).take(n)]


def main(argv=None) -> int:
    """Send the events (and the delayed labels) and print how many records went out."""
    args = build_parser().parse_args(argv)
    delay = None if args.delay < 0 else args.delay
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, linger_ms=5)
    started = time.monotonic()
    stream = records(rows(args.data, args.limit), delay)
    sent = send_all(producer, stream, args.events, args.labels, args.rate)
    print(f"sent {sent} records to {args.events}/{args.labels} in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
