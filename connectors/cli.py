"""`river-pa serve`: build the configuration and the model, then run the Kafka daemon.

The flags are parsed by `river_pa.cli` (defined in `river_pa.connectors.config`);
`python -m river_pa.connectors` and `python -m river_pa.connectors.cli` run the same command.

"""

from __future__ import annotations

import faulthandler
import logging
import signal
import sys

__all__ = ["run"]


def run(args) -> int:
    """Serve with the parsed flags `args` until SIGTERM/SIGINT; returns the exit status
    (1: configuration, report path, metrics port in use, cluster unusable (also at a stop
    signal with no broker left) or an output lost, 2: settings that conflict, unknown model,
    parameter or metric, a model that fails at start or on `MODEL_FAILURES_TO_STOP` records in
    a row, 3: checkpoint, also a learner with no state whose group has committed offsets,
    without --allow-empty-state), with one line on stderr; 70: no step of the loop for
    --stall-exit-seconds (connectors/observe/metrics.py's `Watchdog`)."""
    from river_pa.connectors.errors import CheckpointError
    from river_pa.connectors.state.checkpoint import check_writable
    from river_pa.connectors.config import ServeConfig, SettingsConflict, from_args
    from river_pa.connectors.models.slot import check_model
    from river_pa.connectors.kafka.diagnostics import quiet_normal_operation
    from river_pa.connectors.models.challengers import make_challengers
    from river_pa.connectors.observe.drift import make_detector
    from river_pa.connectors.observe.metrics import Endpoints, Watchdog
    from river_pa.connectors.observe.reporting import check_report_path, serve_metrics
    from river_pa.mixing import check_mixable
    from river_pa.registry import make_model

    try:
        cfg = from_args(vars(args))
    except SystemExit as exc:  # one line naming the setting
        print(exc.code, file=sys.stderr)
        return 2 if isinstance(exc, SettingsConflict) else 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    quiet_normal_operation()
    # `kill -USR1 <pid>`: every thread's stack on stderr, the process goes on (a daemon whose
    # loop makes no step: the soak found kafka-python 3.0.12 waiting for ever in net.run)
    if sys.__stderr__ is not None:  # the process's own stderr (sys.stderr may have no fd)
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    try:
        model = make_model(cfg.model, cfg.model_params)
        serve_metrics(cfg.metric, model)  # an unknown --metric: status 2 before any I/O
        make_detector(cfg.drift_detector, cfg.drift_params)  # likewise a bad detector
        challengers = make_challengers(cfg.challenger, model, cfg.metric)  # ... or challenger
        check_model(model)  # a model broken by its parameters: status 2, not a crash loop
        if cfg.shards > 1:  # sharded learners average copies of it (connectors/shards/)
            check_mixable(model)
    except ValueError as exc:
        print(f"river-pa serve: {exc}", file=sys.stderr)
        return 2
    _unknown_reactions(cfg.on_drift, [type(model).__name__, *dict(challengers)])
    if cfg.auto_promote_cooldown != ServeConfig.auto_promote_cooldown and not cfg.auto_promote:
        logging.getLogger("river_pa.serve").warning(
            "auto_promote_cooldown=%d has no effect without auto_promote (--auto-promote): "
            "promotions are by `river-pa models promote` only", cfg.auto_promote_cooldown)
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
    endpoints = None
    if cfg.metrics_port is not None:  # bound before connecting: a port in use is one line
        try:
            endpoints = Endpoints(cfg.metrics_port)
        except OSError as exc:
            print(f"river-pa serve: cannot serve --metrics-port {cfg.metrics_port} "
                  f"({exc.strerror})", file=sys.stderr)
            return 1
    watchdog = Watchdog(cfg.stall_exit_seconds)
    try:
        return _serve(cfg, model, [o for o in (endpoints, watchdog) if o is not None])
    finally:
        if endpoints is not None:
            endpoints.close()


def _unknown_reactions(on_drift: str, names: list[str]) -> None:
    """Warn of `--on-drift` reactions of models this start does not have (a typo; or a model
    `river-pa models add` or a promotion may name later, which they then apply to)."""
    from river_pa.connectors.observe.drift import parse_on_drift

    unknown = sorted(set(parse_on_drift(on_drift)[1]) - set(names))
    if unknown:
        logging.getLogger("river_pa.serve").warning(
            "on_drift gives a reaction to %s, which this start has no model of (served: %s; "
            "challengers: %s): it applies if a model of that name comes (models add, a "
            "promotion)", ", ".join(unknown), names[0], ", ".join(names[1:]) or "none")


def _serve(cfg, model, observers) -> int:
    """Connect and run the daemon of `cfg.role`, watched by `observers` (the endpoints and
    the watchdog of connectors/observe/metrics.py; see `run` for the exit statuses)."""
    from river_pa.connectors.errors import EXIT_STATUSES, SettingsConflict, exit_status
    from river_pa.connectors.kafka.errors import ClientError
    from river_pa.connectors.kafka.diagnostics import explain, unreachable
    from river_pa.connectors.loop.daemon import Daemon
    from river_pa.connectors.roles.learner import run_learner
    from river_pa.connectors.roles.predictor import Predictor

    no_broker = unreachable(cfg)  # in about a second, not after kafka-python's 10 s retries
    if no_broker:
        print(f"river-pa serve: {no_broker}", file=sys.stderr)
        return 1
    if not cfg.checkpoint_key:  # after the connection check: a failed start is one line
        logging.getLogger("river_pa.serve").warning(
            "CHECKPOINTS ARE NOT SIGNED: anyone who can write %s or the state, model%s and "
            "control topics decides this daemon's model (no code runs); set --checkpoint-key (or "
            "RIVER_PA_CHECKPOINT_KEY)", cfg.checkpoint_path, ", mix" if cfg.shards > 1 else "")
    try:
        daemon = None
        if cfg.role != "learn":  # a learner is standby until elected (connectors/roles/learner.py)
            daemon = (Predictor if cfg.role == "predict" else Daemon)(cfg, model)
        for observer in observers:
            observer.daemon = daemon
            observer.start()
        return run_learner(cfg, model, observers) if daemon is None else daemon.run()
    except SettingsConflict as exc:  # what the topics say of the settings (--shards): one line
        print(exc.code, file=sys.stderr)
        return 2
    except (*(cls for cls, _, _ in EXIT_STATUSES), ClientError) as exc:
        status, prefix = exit_status(exc)
        line = explain(exc, cfg) if prefix is None else f"{prefix}{exc}"
        print(f"river-pa serve: {line}", file=sys.stderr)
        return status


if __name__ == "__main__":
    from river_pa.cli import main

    sys.exit(main(["serve", *sys.argv[1:]]))
