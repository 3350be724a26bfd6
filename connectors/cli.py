"""`river-pa serve`: run the Kafka daemon (`python -m river_pa.connectors.cli --help`)."""

from __future__ import annotations

import logging
import sys

from kafka.errors import KafkaError

from river_pa.connectors.checkpoint import CheckpointError, check_writable
from river_pa.connectors.config import load_config
from river_pa.connectors.daemon import Daemon
from river_pa.connectors.kafka_io import OutputError, explain
from river_pa.connectors.reporting import check_report_path

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
        check_report_path(cfg.report_path)
    except OSError as exc:  # was a traceback at the first report, on every restart
        print(f"river-pa serve: cannot append to --report-path {cfg.report_path} "
              f"({exc.strerror})", file=sys.stderr)
        return 1
    if not cfg.checkpoint_key:
        logging.getLogger("river_pa.serve").warning(
            "CHECKPOINTS ARE NOT SIGNED: anyone who can write %s runs code in this daemon at its "
            "next start; set --checkpoint-key (or RIVER_PA_CHECKPOINT_KEY)", cfg.checkpoint_path)
    try:
        daemon = Daemon(cfg, model)
    except ValueError as exc:  # an unknown --metric, or one that does not fit the model
        print(f"river-pa serve: {exc}", file=sys.stderr)
        return 2
    try:
        return daemon.run()
    except CheckpointError as exc:
        print(f"river-pa serve: checkpoint: {exc}", file=sys.stderr)
        return 3
    except (KafkaError, OutputError) as exc:  # nothing was committed past the failure
        print(f"river-pa serve: {explain(exc, cfg)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
