"""Configuration of `river-pa serve`: defaults < TOML file < environment < command-line flags.

Every setting is a field of `ServeConfig`. In the TOML file a field is a top-level key; the
table `[kafka]` passes settings straight to the kafka-python clients (security_protocol,
sasl_mechanism, sasl_plain_username, ssl_cafile, ...), translated to librdkafka's names with
`kafka_client = "confluent"` (connectors/kafka/confluent_settings.py). In the environment a field is
`RIVER_PA_<FIELD>` (upper case), and `RIVER_PA_KAFKA_<SETTING>` adds a client setting.

"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tomllib
from dataclasses import dataclass, field

from river_pa.connectors.checks import (
    NOT_NEGATIVE, POSITIVE, check_client, check_keys, check_types, check_values, out_of_range,
)
from river_pa.connectors.errors import SettingsConflict
from river_pa.connectors.kafka import CLIENTS
from river_pa.connectors.observe.drift import DETECTORS

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
    challenger: list = field(default_factory=list)
    challenger_alpha: float = 0.01
    challenger_min_labels: int = 500
    auto_promote: bool = False
    auto_promote_cooldown: int = 5000
    shadow: bool = False
    metric: list = field(default_factory=list)
    rolling_window: int = 1000
    drift_detector: str = "ADWIN"
    drift_params: dict = field(default_factory=dict)
    on_drift: str = "log"
    checkpoint_path: str = "river-pa-checkpoint.bin"
    checkpoint_key: str | None = None
    checkpoint_every: int = 5000
    checkpoint_seconds: float = 10.0
    state_topic: str | None = None
    model_topic: str | None = None
    control_topic: str | None = None
    publish_every: int = 5000
    keep_versions: int = 5
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
    merge_idle_ms: int | None = None
    session_timeout_ms: int = 10_000
    exactly_once: bool = False
    transactional_id: str | None = None
    kafka_client: str = "kafka-python"
    kafka: dict = field(default_factory=dict)
    shards: int = 1
    mix_every: int = 1000
    mix_seconds: float = 5.0
    mix_topic: str | None = None


def lease_topic(cfg: ServeConfig) -> str:
    """`<events_topic>.lease`, or `<events_topic>.lease.<N>` for `--shards N` (N partitions):
    deployments of other shard counts on the same events topic keep apart."""
    return f"{cfg.events_topic}.lease" + (f".{cfg.shards}" if cfg.shards > 1 else "")


def lease_group(cfg: ServeConfig) -> str:
    """`<group_id>.lease`, or `<group_id>.lease.<N>` for `--shards N`: a learner started with
    another shard count joins another group, and so cannot move the leases of the running
    ones (a new user's `--shards 3` beside two shards' learners made shard 0 change hands
    every 20 s, and left shard 1 without a leader); it meets their states and refuses them."""
    return f"{cfg.group_id}.lease" + (f".{cfg.shards}" if cfg.shards > 1 else "")


# name -> annotation of every setting (the TOML checks read them)
FIELDS = {f.name: f.type for f in dataclasses.fields(ServeConfig)}

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
    "challenger": "NAME=MODEL or NAME=MODEL{JSON parameters}, repeatable: a model the learner "
                  "learns and scores beside the served one on the same stream, e.g. "
                  "'c01=PAClassifier{\"C\": 0.1}' (its metrics in the report and on /metrics "
                  "under its name; predictors ignore it)",
    "challenger_alpha": "level of the test that says a challenger beats the served model on "
                        "the last --rolling-window labels (McNemar's exact test; for a "
                        "regressor the sign test of the absolute errors), at most 0.5",
    "challenger_min_labels": "labels the window must hold before the test says a challenger "
                             "beats the served model",
    "auto_promote": "promote a challenger to the served model as soon as the test says it "
                    "beats it (the one with the smallest p when several do), logged with the "
                    "figures; the former served model goes on as a challenger",
    "auto_promote_cooldown": "labels that must pass after the start and after each promotion "
                             "before --auto-promote promotes (again): two close models do not "
                             "swap back and forth; 0: none",
    "shadow": "write the challengers' predictions into each prediction record too (\"shadow\": "
              "{NAME: prediction}); the learner then publishes their models with the served one "
              "(give it to the learner and the predictors)",
    "metric": "river.metrics class name, repeatable or comma-separated "
              "(default: Accuracy, or MAE for regressors)",
    "rolling_window": "labels in the rolling metric's window",
    "drift_detector": "river.drift detector watching the errors of the progressive predictions"
                      " (ADWIN, PageHinkley, or none); each detection is logged and counted "
                      "(river_pa_drifts_total, the report's drift)",
    "drift_params": "JSON object of keyword arguments for the drift detector, e.g. "
                    "'{\"delta\": 0.001}'",
    "on_drift": "what a detected drift does besides its log line and count: log (nothing "
                "more), reset (the model, served or challenger, starts afresh: the label that "
                "showed the drift is its first) or challenger (a drift of the served model "
                "starts a fresh copy of it as challenger fresh-LABEL, replacing the one an "
                "earlier drift started; --auto-promote promotes it once it is better); "
                "comma-separated NAME=REACTION items give model NAME its own, e.g. "
                "challenger,c05=reset",
    "checkpoint_path": "file of the checkpoint (model, metrics, pending store, offsets)",
    "checkpoint_key": "HMAC key; checkpoints are signed and verified before unpickling",
    "checkpoint_every": "checkpoint and commit after this many records",
    "checkpoint_seconds": "checkpoint and commit after this many seconds",
    "state_topic": "compacted topic that keeps a copy of every checkpoint; restored from when the"
                   " local checkpoint is missing (a new node); with --role learn the copy is "
                   "always restored (default: none; with --role learn '<events_topic>.state')",
    "model_topic": "compacted topic of the model snapshots the learner publishes and the "
                   "predictors restore (default: '<events_topic>.model')",
    "control_topic": "compacted topic of the commands `river-pa models` writes (promote, "
                     "pin, unpin, add, remove), read by the learner (default: "
                     "'<events_topic>.control')",
    "publish_every": "the learner publishes the model (and each challenger that learned) after "
                     "this many events",
    "keep_versions": "versions of each model the model topic keeps (compaction drops older "
                     "ones): those `river-pa models pin` can serve again; 2 to 1000",
    "publish_seconds": "the learner publishes the model after this many seconds (if it learned)",
    "report_every": "a report snapshot after this many events",
    "report_seconds": "a report snapshot after this many seconds",
    "report_path": "JSONL report file the snapshots are appended to (river-pa report renders it)",
    "metrics_port": "serve Prometheus /metrics and the /livez and /readyz probes on this HTTP "
                    "port, 0: any free port, logged (default: off)",
    "liveness_seconds": "/livez answers 503 once the loop has made no step for this long",
    "stall_exit_seconds": "exit with status 70 (every thread's stack on stderr) once the loop has "
                          "made no step for this long, for the supervisor to restart it; 0: never; "
                          "above batch_seconds plus the Kafka calls' timeout (35 s unless --kafka "
                          "sets it)",
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
    "merge_idle_ms": "how long a partition read to its end must stay empty before the merge "
                     "releases later records of the others (Kafka Streams' max.task.idle.ms: a "
                     "label written a little after a later event is still merged before it; "
                     "one written later is counted in late_records), at most 60000 (default: "
                     "500 with --role learn, 0 otherwise: predictions are not held back)",
    "session_timeout_ms": "Kafka consumer group session timeout",
    "exactly_once": "predictions and offsets in one Kafka transaction",
    "transactional_id": "the --exactly-once producer's id; give each daemon its own client id "
                        "(default: '<group_id>-<client_id>'; with --role learn "
                        "'<group_id>.learner', one for every learner of the group, so a new "
                        "active learner fences the old one)",
    "kafka_client": "the Kafka client library of the data path: kafka-python, or confluent "
                    "(confluent-kafka, librdkafka: pip install \"river-pa[confluent]\"; "
                    "the admin calls and the learner's lease stay on kafka-python)",
    "kafka": "JSON object of extra client settings, kafka-python's names under both clients "
             "(SASL/SSL, ...)",
    "shards": "--role learn: N active learners, one per shard (the events and labels "
              "partitions p with p mod N = s), each with its own state and standbys, mixing "
              "their models through --mix-topic (iterative parameter mixing; "
              "docs/serving/shards.md)",
    "mix_every": "with --shards: the shards mix after K labelled events in total (each "
                 "shard's round ends at ceil(K/N) of its own)",
    "mix_seconds": "with --shards: a shard whose input is read to its end ends its round "
                   "after this long (the stream's tail, a quiet shard)",
    "mix_topic": "with --shards: the compacted topic the shards exchange their models through "
                 "(default: '<events_topic>.mix')",
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
            metavar = "NAME=MODEL" if f.name == "challenger" else "NAME"
            parser.add_argument(flag, action="append", default=None, metavar=metavar, help=help_)
        else:
            metavar = {"int": "N", "int | None": "N", "float": "X", "dict": "JSON"}.get(f.type)
            parser.add_argument(flag, type=_parser_for(f), default=None, help=help_,
                                metavar=metavar, choices=_CHOICES.get(f.name))


# flags of a few values: a bad one is argparse's error (status 2) like any bad flag
_CHOICES = {"role": ("both", "learn", "predict"), "auto_offset_reset": ("earliest", "latest"),
            "kafka_client": CLIENTS, "drift_detector": (*DETECTORS, "none")}


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone `river-pa serve` argument parser (the command line's is in river_pa.cli)."""
    parser = argparse.ArgumentParser(prog="river-pa serve", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return parser


def _json_object(text: str) -> dict:
    """A JSON object from the command line or the environment."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # nested too deep: RecursionError
        raise argparse.ArgumentTypeError(f"not valid JSON ({str(exc):.80}): {text!r:.60}") \
            from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text!r:.60}")
    return value


def _on_drift(text: str) -> str:
    from river_pa.connectors.observe.drift import parse_on_drift

    try:  # a bad flag is argparse's error (status 2), naming the flag
        parse_on_drift(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("on_drift ")) from None
    return text


def _parser_for(f: dataclasses.Field):
    if f.name == "on_drift":
        return _on_drift
    kinds = {"int": int, "float": float, "dict": _json_object, "int | None": int}
    kind = kinds.get(f.type, str)
    if f.name not in POSITIVE + NOT_NEGATIVE:
        return kind

    def bounded(text: str):  # a bad flag is argparse's error (status 2), naming the flag
        value = kind(text)
        if why := out_of_range(f.name, value):
            raise argparse.ArgumentTypeError(f"{why}, got {text!r:.60}")
        if f.name == "metrics_port" and value > 65535:
            raise argparse.ArgumentTypeError(f"must be a TCP port (0-65535), got {text!r:.60}")
        return value

    bounded.__name__ = kind.__name__  # argparse says "invalid int value: 'x'"
    return bounded


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
    except (json.JSONDecodeError, RecursionError):
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
        values.update(check_types(check_keys(table, path, FIELDS), path, FIELDS))
    env = _from_env(environ)
    client = {**values.get("kafka", {}), **env.pop("kafka", {}), **(args.pop("kafka") or {})}
    values.update(env)
    values.update({k: v for k, v in args.items() if v is not None})
    values["kafka"] = check_client(client)
    for name in ("model_params", "drift_params"):
        if name in values and not isinstance(values[name], dict):
            raise SystemExit(f"river-pa serve: {name} must be a JSON object, got "
                             f"{type(values[name]).__name__} {values[name]!r:.60}")
    for name, what in (("metric", "metric names"), ("challenger", "NAME=MODEL strings")):
        given = values.get(name, [])
        given = [given] if isinstance(given, str) else given
        if not all(isinstance(m, str) for m in given):
            raise SystemExit(f"river-pa serve: {name} must be {what}, got {given!r:.60}")
        values[name] = given
    return check_values(ServeConfig(**values))
