"""The checks of serve's settings: values in range, topic names, client settings kafka-python
takes, TOML keys and types. Each refusal is one line naming the setting and the value
(SystemExit; SettingsConflict, status 2, for settings valid alone but not together)."""

from __future__ import annotations

import math
import re
import socket
from typing import TYPE_CHECKING

from river_pa.connectors.errors import SettingsConflict

if TYPE_CHECKING:
    from river_pa.connectors.config import ServeConfig

__all__ = ["NOT_NEGATIVE", "POSITIVE", "bound", "check_client", "check_keys", "check_types",
           "check_values", "out_of_range"]

POSITIVE = ("rolling_window", "challenger_alpha", "challenger_min_labels", "checkpoint_every",
            "publish_every", "pending_max", "pending_max_bytes", "max_record_bytes",
            "max_poll_records", "max_buffered", "session_timeout_ms", "batch_seconds",
            "liveness_seconds", "keep_versions", "shards", "mix_every")
NOT_NEGATIVE = ("checkpoint_seconds", "publish_seconds", "report_every", "report_seconds", "pending_ttl_ms",
                 "poll_timeout_ms", "metrics_port", "stall_exit_seconds", "merge_idle_ms",
                 "auto_promote_cooldown", "mix_seconds")
MAXIMUM = {"merge_idle_ms": 60_000,  # a partition left empty must not hold the others for ever
           "challenger_alpha": 0.5,  # a level of a one-sided test
           "keep_versions": 1000,  # snapshots every reader holds until compaction
           "shards": 256}  # each shard reads every other's model at each mix
MINIMUM = {"keep_versions": 2}  # a version to fall back on when the newest does not load


def bound(name: str) -> str:
    """What a numeric setting must be: "> 0" or ">= 0"."""
    low = f">= {MINIMUM[name]}" if name in MINIMUM else "> 0" if name in POSITIVE else ">= 0"
    return f"{low} and <= {MAXIMUM[name]}" if name in MAXIMUM else low


def out_of_range(name: str, value) -> str | None:
    """Why the numeric setting `name` cannot be `value`, or None: NaN passed every comparison
    (--stall-exit-seconds nan meant never; --batch-seconds nan was a traceback)."""
    if not math.isfinite(value):
        return f"must be a finite number {bound(name)}"
    if (value < MINIMUM.get(name, 0) or (value == 0 and name in POSITIVE)
            or value > MAXIMUM.get(name, math.inf)):
        return f"must be {bound(name)}"
    return None


def check_values(cfg: ServeConfig) -> ServeConfig:
    """Refuse values out of range: --max-buffered 0 processed nothing, silently, for ever;
    --rolling-window 0 and --max-poll-records 0 died with tracebacks once records came."""
    for name in POSITIVE + NOT_NEGATIVE:
        value = getattr(cfg, name)
        if value is None:
            continue
        if why := out_of_range(name, value):  # from TOML: status 1
            raise SystemExit(f"river-pa serve: {name} {why}, got {value}")
    if cfg.metrics_port is not None and cfg.metrics_port > 65535:
        raise SystemExit(f"river-pa serve: metrics_port must be a TCP port (0-65535), got "
                         f"{cfg.metrics_port}")
    for name in ("client_id", "transactional_id"):
        value = getattr(cfg, name)
        if value and "{hostname}" in value:  # e.g. each replica of a scaled compose service
            setattr(cfg, name, value.replace("{hostname}", socket.gethostname()))
    if cfg.role not in ("both", "learn", "predict"):
        raise SystemExit(f"river-pa serve: role must be both, learn or predict, got {cfg.role!r}")
    if cfg.merge_idle_ms is None:  # the learner's time matters less than its order
        cfg.merge_idle_ms = 500 if cfg.role == "learn" else 0
    if cfg.model_topic is None:
        cfg.model_topic = f"{cfg.events_topic}.model"
    if cfg.control_topic is None:
        cfg.control_topic = f"{cfg.events_topic}.control"
    if cfg.role == "learn":  # every learner of the group shares its state and fences the others
        cfg.state_topic = cfg.state_topic or f"{cfg.events_topic}.state"
        cfg.transactional_id = cfg.transactional_id or f"{cfg.group_id}.learner"
    _check_shards(cfg)
    _check_topics(cfg)
    _check_poll_interval(cfg)
    _check_stall_exit(cfg)
    if cfg.auto_offset_reset not in ("earliest", "latest"):
        raise SystemExit(f"river-pa serve: auto_offset_reset must be earliest or latest, "
                         f"got {cfg.auto_offset_reset!r}")
    from river_pa.connectors.observe.drift import reactions

    try:  # the detector's name and parameters: cli.py, status 2
        given = reactions(cfg.on_drift)
    except ValueError as exc:
        raise SystemExit(f"river-pa serve: {exc}") from None
    if given != {"log"} and cfg.drift_detector == "none":
        raise SettingsConflict(f"river-pa serve: on_drift={cfg.on_drift:.80} needs a drift "
                               "detector, and drift_detector is none")
    fresh = "challenger" in given  # models/fresh.py
    if cfg.auto_promote and not (cfg.challenger or fresh):
        raise SettingsConflict("river-pa serve: auto_promote needs a challenger to promote "
                               "(--challenger, or --on-drift challenger)")
    if (cfg.challenger or fresh) and cfg.challenger_min_labels > cfg.rolling_window:
        raise SettingsConflict(f"river-pa serve: challenger_min_labels="
                               f"{cfg.challenger_min_labels} is above rolling_window="
                               f"{cfg.rolling_window}, the labels the test looks at")
    from river_pa.connectors.kafka.confluent_settings import check_client_choice

    check_client_choice(cfg)
    return cfg


def _check_shards(cfg: ServeConfig) -> None:
    """Sharded learning (connectors/shards/) is a learner's, for a model the learner only
    learns: predictors serve the mix, and a challenger, a promotion or a pin is one learner's
    decision that N shards would each take apart."""
    if cfg.mix_topic is None:
        cfg.mix_topic = f"{cfg.events_topic}.mix"
    if cfg.shards == 1:
        return
    if cfg.role != "learn":
        raise SettingsConflict(f"river-pa serve: shards={cfg.shards} needs role learn (the "
                               f"predictors serve the shards' mixed model), got {cfg.role}")
    from river_pa.connectors.observe.drift import reactions

    given = [r for r in reactions(cfg.on_drift) if r != "log"]
    for name, value in (("challenger", cfg.challenger), ("auto_promote", cfg.auto_promote),
                        ("on_drift", ",".join(given))):
        if value:
            raise SettingsConflict(f"river-pa serve: shards={cfg.shards} takes no {name} "
                                   f"(got {value!r:.80}): sharded learners learn one model")


def _after_batch_ms(cfg: ServeConfig) -> int:
    """What the loop may spend between two polls beyond --batch-seconds: the checkpoint, the
    flush of the outputs and the commit or transaction after a batch, each call bounded by the
    client's timeouts (30 s by default: a consumer's request timeout)."""
    from river_pa.connectors.kafka.client import longest_call_ms

    return longest_call_ms(cfg.kafka)


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
    slack = _after_batch_ms(cfg)
    needed = int(cfg.batch_seconds * 1000) + slack
    if interval < needed:
        raise SettingsConflict(
            f"river-pa serve: max_poll_interval_ms={interval} is shorter than batch_seconds="
            f"{cfg.batch_seconds:g} s plus {slack / 1000:g} s for the checkpoint after a "
            f"batch: set max_poll_interval_ms >= {needed} or lower batch_seconds")


def _check_stall_exit(cfg: ServeConfig) -> None:
    """Refuse a --stall-exit-seconds that a healthy loop can reach: a batch, then the Kafka
    calls after it. Accepted, the watchdog ended healthy daemons (an idle standby at 0.5 s, an
    active learner waiting for end offsets while a broker restarted at 10 s), in a loop."""
    limit, slack = cfg.stall_exit_seconds, _after_batch_ms(cfg)
    longest = cfg.batch_seconds + slack / 1000
    if limit and limit <= longest:
        raise SettingsConflict(
            f"river-pa serve: stall_exit_seconds={limit:g} is not above what a step of the loop "
            f"may take, batch_seconds={cfg.batch_seconds:g} s plus {slack / 1000:g} s for the "
            f"Kafka calls after a batch: set it above {longest:g}, or 0 never to exit")


# Kafka's rule for topic names (kafka.common.internals.Topic): a bad one was a traceback at
# start, or at the first write for an output topic
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_OPTIONAL_TOPICS = ("labels_topic", "metrics_topic", "state_topic")  # "" or unset: none


def _check_topics(cfg: ServeConfig) -> None:
    for name in ("events_topic", "predictions_topic", "dead_letter_topic", "model_topic",
                 "control_topic", "mix_topic", *_OPTIONAL_TOPICS):
        value = getattr(cfg, name)
        if name in _OPTIONAL_TOPICS and not value:
            continue
        if not _TOPIC.fullmatch(value) or value in (".", ".."):
            raise SystemExit(f"river-pa serve: {name} must be a Kafka topic name (1-249 of "
                             f"a-z A-Z 0-9 . _ -), got {value!r:.80}")
    others = {getattr(cfg, n): n for n in ("events_topic", "labels_topic", "predictions_topic",
                                            "metrics_topic", "dead_letter_topic", "model_topic",
                                            "state_topic") if getattr(cfg, n)}
    if cfg.control_topic in others or cfg.control_topic == f"{cfg.events_topic}.lease":
        raise SettingsConflict(f"river-pa serve: control_topic {cfg.control_topic!r:.80} is "
                               f"also the {others.get(cfg.control_topic, 'lease topic')}: the "
                               "commands of `river-pa models` need a topic of their own")
    if cfg.shards > 1 and (cfg.mix_topic in others or cfg.mix_topic in (
            cfg.control_topic, f"{cfg.events_topic}.lease.{cfg.shards}")):
        raise SettingsConflict(f"river-pa serve: mix_topic {cfg.mix_topic!r:.80} is another "
                               "topic of the deployment: the shards' models need one of their own")


_TOML_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,),
               "str": (str,), "list": (list, str)}


def check_types(table: dict, path: str, fields: dict[str, str]) -> dict:
    """Refuse TOML values of the wrong type for `fields` (name -> annotation): a string where a
    number goes was accepted, and the daemon died mid-stream at its first comparison."""
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


def check_client(settings: dict) -> dict:
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


def check_keys(table: dict, path: str, fields: dict[str, str]) -> dict:
    """Refuse TOML keys that are not settings (`fields`)."""
    unknown = set(table) - set(fields)
    if unknown:
        raise SystemExit(f"{path}: unknown settings {sorted(unknown)}")
    return table
