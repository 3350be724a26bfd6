"""Configuration of `river-pa serve`: defaults < TOML file < environment < command-line flags.

Every setting is a field of `ServeConfig`. In the TOML file a field is a top-level key; the
table `[kafka]` passes settings straight to the kafka-python clients (security_protocol,
sasl_mechanism, sasl_plain_username, ssl_cafile, ...). In the environment a field is
`RIVER_PA_<FIELD>` (upper case), and `RIVER_PA_KAFKA_<SETTING>` adds a client setting.

"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import socket
import tomllib
from dataclasses import dataclass, field

from river_pa.connectors.errors import SettingsConflict

__all__ = ["ServeConfig", "SettingsConflict", "add_arguments", "build_parser", "from_args",
           "load_config"]

ENV_PREFIX = "RIVER_PA_"


@dataclass
class ServeConfig:
    """All settings of the daemon, with their defaults."""

    role: str = "both"
    bootstrap_servers: str = "127.0.0.1:19092"
    events_topic: str = "events"
    labels_topic: str | None = None
    predictions_topic: str = "predictions"
    metrics_topic: str | None = "metrics"
    dead_letter_topic: str = "dead-letters"
    group_id: str = "river-pa"
    client_id: str = "river-pa-serve"
    auto_offset_reset: str = "earliest"
    allow_empty_state: bool = False
    model: str = "PAClassifier"
    model_params: dict = field(default_factory=dict)
    metric: list = field(default_factory=list)
    rolling_window: int = 1000
    checkpoint_path: str = "river-pa-checkpoint.bin"
    checkpoint_key: str | None = None
    checkpoint_every: int = 5000
    checkpoint_seconds: float = 10.0
    state_topic: str | None = None
    model_topic: str | None = None
    publish_every: int = 5000
    publish_seconds: float = 5.0
    report_every: int = 1000
    report_seconds: float = 10.0
    report_path: str | None = "river-pa-report.jsonl"
    metrics_port: int | None = None
    liveness_seconds: float = 60.0
    stall_exit_seconds: float = 300.0
    pending_max: int = 100_000
    pending_max_bytes: int = 256 * 2**20
    pending_ttl_ms: int | None = None
    max_record_bytes: int = 100_000
    max_poll_records: int = 500
    poll_timeout_ms: int = 200
    batch_seconds: float = 5.0
    max_buffered: int = 20_000
    session_timeout_ms: int = 10_000
    exactly_once: bool = False
    transactional_id: str | None = None
    kafka: dict = field(default_factory=dict)


_FLAGS_HELP = {
    "role": "both: one process predicts and learns; learn: the one learner (predicts each "
            "event only for the progressive metric, emits no predictions, publishes the model "
            "to --model-topic); predict: predicts with the newest published model, learns "
            "nothing (ignores --labels-topic and --state-topic)",
    "bootstrap_servers": "Kafka brokers, host:port[,host:port...]",
    "events_topic": "topic of the events {id, x[, y][, ts]} to predict (and learn if they carry y)",
    "labels_topic": "topic of late labels {id, y}, co-partitioned with the events topic",
    "predictions_topic": "topic the predictions are written to",
    "metrics_topic": "topic the report snapshots are written to",
    "dead_letter_topic": "topic bad records go to, unchanged, with the reason in headers",
    "group_id": "Kafka consumer group; daemons of one group share the partitions",
    "client_id": "Kafka client id of this daemon ('{hostname}' in it, and in --transactional-id,"
                 " is replaced by the host name: one setting for scaled replicas)",
    "auto_offset_reset": "where a partition with no committed offset starts: earliest or latest",
    "allow_empty_state": "--role learn: start with an empty model although the group has "
                         "committed offsets but no state is found (state topic emptied or "
                         "deleted, no checkpoint), relearning from where --auto-offset-reset "
                         "says (earliest: all the topics retain); without it such a start is "
                         "refused, status 3",
    "model": "a river_pa class name, or 'module:attribute' naming a River estimator class or "
             "instance, e.g. a pipeline 'mymodels:model' in ./mymodels.py (the module is looked"
             " up in the current folder first and imported: trusted modules only; factories "
             "are not called)",
    "model_params": "JSON object of keyword arguments for the model",
    "metric": "river.metrics class name, repeatable or comma-separated "
              "(default: Accuracy, or MAE for regressors)",
    "rolling_window": "labels in the rolling metric's window",
    "checkpoint_path": "file of the checkpoint (model, metrics, pending store, offsets)",
    "checkpoint_key": "HMAC key; checkpoints are signed and verified before unpickling",
    "checkpoint_every": "checkpoint and commit after this many records",
    "checkpoint_seconds": "checkpoint and commit after this many seconds",
    "state_topic": "compacted topic that keeps a copy of every checkpoint; restored from when the"
                   " local checkpoint is missing (a new node); with --role learn the copy is "
                   "always restored (default: none; with --role learn '<events_topic>.state')",
    "model_topic": "compacted topic of the model snapshots the learner publishes and the "
                   "predictors restore (default: '<events_topic>.model')",
    "publish_every": "the learner publishes the model after this many events",
    "publish_seconds": "the learner publishes the model after this many seconds (if it learned)",
    "report_every": "a report snapshot after this many events",
    "report_seconds": "a report snapshot after this many seconds",
    "report_path": "JSONL report file the snapshots are appended to (river-pa report renders it)",
    "metrics_port": "serve Prometheus /metrics and the /livez and /readyz probes on this HTTP "
                    "port, 0: any free port, logged (default: off)",
    "liveness_seconds": "/livez answers 503 once the loop has made no step for this long",
    "stall_exit_seconds": "exit with status 70 (every thread's stack on stderr) once the loop has "
                          "made no step for this long, for the supervisor to restart it; 0: never",
    "pending_max": "events kept waiting for their label at most (the oldest are expired)",
    "pending_ttl_ms": "expire events still waiting for a label after this much event time",
    "pending_max_bytes": "memory budget of the events waiting for a label (ids, features and "
                         "predictions, bytes; early labels have one of their own); the oldest "
                         "are evicted and counted as expired",
    "max_record_bytes": "records larger than this are dead-lettered as oversize",
    "max_poll_records": "records processed at most per batch",
    "poll_timeout_ms": "how long a poll waits for records when none are ready",
    "batch_seconds": "process at most this long between polls (well inside max.poll.interval.ms)",
    "max_buffered": "records buffered at most before fetching pauses (flow control)",
    "session_timeout_ms": "Kafka consumer group session timeout",
    "exactly_once": "predictions and offsets in one Kafka transaction",
    "transactional_id": "the --exactly-once producer's id; give each daemon its own client id "
                        "(default: '<group_id>-<client_id>'; with --role learn "
                        "'<group_id>.learner', one for every learner of the group, so a new "
                        "active learner fences the old one)",
    "kafka": "JSON object of extra kafka-python client settings (SASL/SSL, ...)",
}


def _default(f: dataclasses.Field):
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def add_arguments(parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None) -> None:
    """Add `--config` and one flag per `ServeConfig` field (or per field named in `only`) to
    `parser`, each with its help and default; every flag defaults to None (not given), so the
    TOML file and the environment can fill it (see `from_args`)."""
    parser.add_argument("--config", metavar="TOML", help="TOML configuration file (its keys "
                        "are the flags' names with underscores, and a [kafka] table)")
    for f in dataclasses.fields(ServeConfig):
        if only is not None and f.name not in only:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = _default(f)
        shown = json.dumps(default) if isinstance(default, (dict, list)) else default
        shown = "none" if default is None else shown
        text = _FLAGS_HELP[f.name]  # a help that states its own default keeps it alone
        help_ = f"{text} ({'' if '(default:' in text else f'default: {shown}; '}" \
                f"RIVER_PA_{f.name.upper()})"
        if f.type == "bool":
            parser.add_argument(flag, action="store_const", const=True, default=None, help=help_)
        elif f.type == "list":
            parser.add_argument(flag, action="append", default=None, metavar="NAME", help=help_)
        else:
            metavar = {"int": "N", "int | None": "N", "float": "X", "dict": "JSON"}.get(f.type)
            parser.add_argument(flag, type=_parser_for(f), default=None, help=help_,
                                metavar=metavar, choices=_CHOICES.get(f.name))


# flags of a few values: a bad one is argparse's error (status 2) like any bad flag
_CHOICES = {"role": ("both", "learn", "predict"), "auto_offset_reset": ("earliest", "latest")}


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone `river-pa serve` argument parser (the command line's is in river_pa.cli)."""
    parser = argparse.ArgumentParser(prog="river-pa serve", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return parser


def _json_object(text: str) -> dict:
    """A JSON object from the command line or the environment."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r:.60}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text!r:.60}")
    return value


def _parser_for(f: dataclasses.Field):
    kinds = {"int": int, "float": float, "dict": _json_object, "int | None": int}
    kind = kinds.get(f.type, str)
    if f.name not in _POSITIVE + _NOT_NEGATIVE:
        return kind

    def bounded(text: str):  # a bad flag is argparse's error (status 2), naming the flag
        value = kind(text)
        if value < 0 or (value == 0 and f.name in _POSITIVE):
            raise argparse.ArgumentTypeError(f"must be {_bound(f.name)}, got {text!r:.60}")
        if f.name == "metrics_port" and value > 65535:
            raise argparse.ArgumentTypeError(f"must be a TCP port (0-65535), got {text!r:.60}")
        return value

    bounded.__name__ = kind.__name__  # argparse says "invalid int value: 'x'"
    return bounded


def _bound(name: str) -> str:
    return "> 0" if name in _POSITIVE else ">= 0"


def _from_env(environ) -> dict:
    values, client = {}, {}
    names = {f.name: f for f in dataclasses.fields(ServeConfig)}
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX):].lower()
        if name in names and name != "kafka":
            try:
                values[name] = _coerce(names[name], raw)
            except (ValueError, argparse.ArgumentTypeError) as exc:  # was a traceback
                raise SystemExit(f"river-pa serve: {key}={raw!r:.60} is not valid: {exc}") from None
        elif name.startswith("kafka_") and name != "kafka_bootstrap":
            client[name[len("kafka_"):]] = _json_or_text(raw)
    if "RIVER_PA_KAFKA_BOOTSTRAP" in environ and "bootstrap_servers" not in values:
        values["bootstrap_servers"] = environ["RIVER_PA_KAFKA_BOOTSTRAP"]
    if client:
        values["kafka"] = client
    return values


def _json_or_text(raw: str):
    """'false' -> False, '3000' -> 3000, anything else stays text (client settings)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True,
             "0": False, "false": False, "no": False, "off": False}


def _coerce(f: dataclasses.Field, raw: str):
    if f.type == "bool":  # 'maybe' silently meant false
        value = _BOOLEANS.get(raw.strip().lower())
        if value is None:
            raise ValueError("a boolean takes 1/0, true/false, yes/no or on/off")
        return value
    if f.type == "list":
        return [raw]
    return _parser_for(f)(raw)


def load_config(argv: list[str], environ=None) -> ServeConfig:
    """Merge defaults, the TOML file (`--config`), the environment and the flags."""
    return from_args(vars(build_parser().parse_args(argv)), environ)


def from_args(args: dict, environ=None) -> ServeConfig:
    """Merge defaults, the TOML file (``args["config"]``), the environment and the parsed
    flags `args` (None: not given). SystemExit with one line for a bad file or value."""
    environ = os.environ if environ is None else environ
    args = {name: args.get(name) for name in ["config", *(f.name for f in
                                                          dataclasses.fields(ServeConfig))]}
    values: dict = {}
    path = args.pop("config")
    if path:
        try:
            with open(path, "rb") as fh:
                table = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SystemExit(f"river-pa serve: cannot read --config {path}: {exc}") from None
        values.update(_check_types(_check_keys(table, path), path))
    env = _from_env(environ)
    client = {**values.get("kafka", {}), **env.pop("kafka", {}), **(args.pop("kafka") or {})}
    values.update(env)
    values.update({k: v for k, v in args.items() if v is not None})
    values["kafka"] = _check_client(client)
    for name in ("model_params",):
        if name in values and not isinstance(values[name], dict):
            raise SystemExit(f"river-pa serve: {name} must be a JSON object, got "
                             f"{type(values[name]).__name__} {values[name]!r:.60}")
    metric = values.get("metric", [])
    metric = [metric] if isinstance(metric, str) else metric
    if not all(isinstance(m, str) for m in metric):
        raise SystemExit(f"river-pa serve: metric must be metric names, got {metric!r:.60}")
    values["metric"] = metric
    return _check_values(ServeConfig(**values))


_POSITIVE = ("rolling_window", "checkpoint_every", "publish_every", "pending_max", "pending_max_bytes",
             "max_record_bytes", "max_poll_records", "max_buffered", "session_timeout_ms",
             "batch_seconds", "liveness_seconds")
_NOT_NEGATIVE = ("checkpoint_seconds", "publish_seconds", "report_every", "report_seconds", "pending_ttl_ms",
                 "poll_timeout_ms", "metrics_port", "stall_exit_seconds")


def _check_values(cfg: ServeConfig) -> ServeConfig:
    """Refuse values out of range: --max-buffered 0 processed nothing, silently, for ever;
    --rolling-window 0 and --max-poll-records 0 died with tracebacks once records came."""
    for name in _POSITIVE + _NOT_NEGATIVE:
        value = getattr(cfg, name)
        if value is None:
            continue
        if value < 0 or (value == 0 and name in _POSITIVE):  # from TOML: status 1
            raise SystemExit(f"river-pa serve: {name} must be {_bound(name)}, got {value}")
    if cfg.metrics_port is not None and cfg.metrics_port > 65535:
        raise SystemExit(f"river-pa serve: metrics_port must be a TCP port (0-65535), got "
                         f"{cfg.metrics_port}")
    for name in ("client_id", "transactional_id"):
        value = getattr(cfg, name)
        if value and "{hostname}" in value:  # e.g. each replica of a scaled compose service
            setattr(cfg, name, value.replace("{hostname}", socket.gethostname()))
    if cfg.role not in ("both", "learn", "predict"):
        raise SystemExit(f"river-pa serve: role must be both, learn or predict, got {cfg.role!r}")
    if cfg.model_topic is None:
        cfg.model_topic = f"{cfg.events_topic}.model"
    if cfg.role == "learn":  # every learner of the group shares its state and fences the others
        cfg.state_topic = cfg.state_topic or f"{cfg.events_topic}.state"
        cfg.transactional_id = cfg.transactional_id or f"{cfg.group_id}.learner"
    _check_topics(cfg)
    _check_poll_interval(cfg)
    if cfg.auto_offset_reset not in ("earliest", "latest"):
        raise SystemExit(f"river-pa serve: auto_offset_reset must be earliest or latest, "
                         f"got {cfg.auto_offset_reset!r}")
    return cfg


# What the loop may spend between two polls beyond --batch-seconds: the checkpoint, the flush of
# the outputs and the commit or transaction after a batch (a broker's request timeout is 30 s)
POLL_SLACK_MS = 30_000


def _check_poll_interval(cfg: ServeConfig) -> None:
    """Refuse a consumer `max_poll_interval_ms` the loop cannot keep: a batch takes up to
    `batch_seconds`, then the checkpoint. Accepted, it livelocked: each member was expelled
    from its group after every batch, its commit refused and the batch served again (records
    emitted twice, never committed to the end; a learner stepping down for ever)."""
    from river_pa.connectors.kafka.client import client_defaults

    interval = cfg.kafka.get("max_poll_interval_ms", client_defaults()["max_poll_interval_ms"])
    if not isinstance(interval, int) or isinstance(interval, bool) or interval <= 0:
        raise SystemExit(f"river-pa serve: the Kafka client setting max_poll_interval_ms must "
                         f"be a number of milliseconds > 0, got {interval!r:.60}")
    needed = int(cfg.batch_seconds * 1000) + POLL_SLACK_MS
    if interval < needed:
        raise SettingsConflict(
            f"river-pa serve: max_poll_interval_ms={interval} is shorter than batch_seconds="
            f"{cfg.batch_seconds:g} s plus {POLL_SLACK_MS // 1000} s for the checkpoint after a "
            f"batch: set max_poll_interval_ms >= {needed} or lower batch_seconds")


# Kafka's rule for topic names (kafka.common.internals.Topic): a bad one was a traceback at
# start, or at the first write for an output topic
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_OPTIONAL_TOPICS = ("labels_topic", "metrics_topic", "state_topic")  # "" or unset: none


def _check_topics(cfg: ServeConfig) -> None:
    for name in ("events_topic", "predictions_topic", "dead_letter_topic", "model_topic",
                 *_OPTIONAL_TOPICS):
        value = getattr(cfg, name)
        if name in _OPTIONAL_TOPICS and not value:
            continue
        if not _TOPIC.fullmatch(value) or value in (".", ".."):
            raise SystemExit(f"river-pa serve: {name} must be a Kafka topic name (1-249 of "
                             f"a-z A-Z 0-9 . _ -), got {value!r:.80}")


_TOML_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,),
               "str": (str,), "list": (list, str)}


def _check_types(table: dict, path: str) -> dict:
    """Refuse TOML values of the wrong type (a string where a number goes was accepted, and
    the daemon died mid-stream at its first comparison)."""
    fields = {f.name: f.type for f in dataclasses.fields(ServeConfig)}
    for name, value in table.items():
        kind = fields[name]
        base = kind.removesuffix(" | None")
        ok = isinstance(value, _TOML_TYPES.get(base, (object,)))
        if base in ("int", "float") and isinstance(value, bool):
            ok = False
        if not ok:
            raise SystemExit(f"{path}: {name} must be {'a' if base != 'int' else 'an'} {base}, "
                             f"got {type(value).__name__} {value!r:.60}")
    return table


def _check_client(settings: dict) -> dict:
    """Refuse client settings that neither kafka-python client takes, or that the daemon
    sets itself (each client gets the settings it takes: see kafka/client.py `client_settings`)."""
    from river_pa.connectors.kafka.client import RESERVED_SETTINGS, client_defaults

    reserved = sorted(set(settings) & (RESERVED_SETTINGS | {"bootstrap_servers"}))
    if reserved:  # bootstrap_servers in [kafka] replaced --bootstrap-servers' for the clients
        raise SystemExit(f"river-pa serve: Kafka client settings {reserved} (from [kafka], "
                         "--kafka or RIVER_PA_KAFKA_*) are set by the daemon itself (the "
                         "bootstrap servers with --bootstrap-servers)")
    defaults = client_defaults()
    known = set(defaults) - RESERVED_SETTINGS
    unknown = sorted(set(settings) - known)
    if unknown:
        raise SystemExit(f"river-pa serve: unknown Kafka client settings {unknown} (from [kafka], "
                         "--kafka or RIVER_PA_KAFKA_*); known settings are: "
                         + ", ".join(sorted(known)))
    for key, value in settings.items():
        why = _client_value_error(key, value, defaults[key])
        if why:
            raise SystemExit(f"river-pa serve: Kafka client setting {key}={value!r:.60} (from "
                             f"[kafka], --kafka or RIVER_PA_KAFKA_*): {why}")
    return settings


def _client_value_error(key: str, value, default) -> str | None:
    """Why `value` cannot be client setting `key` (whose default is `default`), if it cannot:
    kafka-python checks few of them and failed later with a TypeError traceback ("abc" for a
    timeout) or a timeout "in -1 ms" that named no setting."""
    if key == "acks":  # 0, 1, -1 or "all"
        return None if value in (0, 1, -1, "all") else "must be 0, 1, -1 or \"all\""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, (int, float)) and default is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        if isinstance(default, int) and not isinstance(value, int):
            return "must be a whole number"
        if value < 0 and key.endswith(("_ms", "_bytes", "_size", "_records")):
            return "must not be negative"
    elif isinstance(default, str) and not isinstance(value, str):
        return "must be a string"
    return None


def _check_keys(table: dict, path: str) -> dict:
    known = {f.name for f in dataclasses.fields(ServeConfig)}
    unknown = set(table) - known
    if unknown:
        raise SystemExit(f"{path}: unknown settings {sorted(unknown)}")
    return table
