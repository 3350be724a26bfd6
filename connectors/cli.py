"""`river-pa serve`: run the Kafka daemon (`python -m river_pa.connectors.cli --help`)."""

from __future__ import annotations

import logging
import sys

from kafka.errors import KafkaError

from river_pa.connectors.checkpoint import CheckpointError, check_writable
from river_pa.connectors.config import load_config
from river_pa.connectors.daemon import Daemon
from river_pa.connectors.kafka_io import OutputError, explain

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Parse the configuration, build the model and serve until SIGTERM/SIGINT."""
    from river_pa.registry import make_model

    cfg = load_config(sys.argv[1:] if argv is None else list(argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    try:
        model = make_model(cfg.model, cfg.model_params)
    except ValueError as exc:
        print(f"river-pa serve: {exc}", file=sys.stderr)
        return 2
    try:
        check_writable(cfg.checkpoint_path)
    except CheckpointError as exc:
        print(f"river-pa serve: {exc}", file=sys.stderr)
        return 3
    try:
        return Daemon(cfg, model).run()
    except CheckpointError as exc:
        print(f"river-pa serve: refusing the checkpoint: {exc}", file=sys.stderr)
        return 3
    except (KafkaError, OutputError) as exc:  # nothing was committed past the failure
        print(f"river-pa serve: {explain(exc, cfg)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
