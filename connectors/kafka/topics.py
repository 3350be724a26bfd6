"""`river-pa topics create`: the topics the daemon's roles use, with the settings they need.

The topic names come from the daemon's own configuration (`ServeConfig`: the same flags, TOML
keys and RIVER_PA_* variables as `river-pa serve`), so the topics created are the ones `serve`
reads and writes with the same settings:

* the events and labels topics: `--partitions` each (co-partitioned: an id's label lands on its
  event's partition only when both topics have the same count);
* predictions, metrics and dead letters: as many partitions (any count works);
* `<events>.model` (`--model-topic`), `<events>.state` (`--state-topic`), `<events>.lease` and
  `<events>.control` (`--control-topic`): one partition, `cleanup.policy=compact` (snapshots,
  the learners' lease, the commands of `river-pa models`).

Every topic is replicated `--replication-factor` times (default min(3, brokers)), with
`min.insync.replicas` 2 from a factor of 3 (a write is then on two brokers before it is
acknowledged), else 1. A topic that exists with these settings is left as it is (running the
command again changes nothing); one that exists with another partition count, a lower
replication factor or `min.insync.replicas`, or without compaction where it is needed, is one
line naming the topic and the setting, and then nothing is created (status 1): Kafka cannot
lower a partition count, and raising one moves keys to other partitions.

This module imports kafka-python only when it talks to the cluster: the command line reads
its docstring and `DEFAULT_PARTITIONS` to describe the command.

"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from river_pa.connectors.config import ServeConfig, lease_topic  # the standard library only

__all__ = ["DEFAULT_PARTITIONS", "MIX_TOPIC_CONFIGS", "Topic", "create", "wanted"]

DEFAULT_PARTITIONS = 6  # the compose file's: three predictors busy, room for six


@dataclass(frozen=True)
class Topic:
    """A topic as `serve` needs it: `partitions` None means any count."""

    name: str
    role: str  # what it is, for the messages: "events topic", "model topic", ...
    partitions: int | None
    compact: bool = False
    configs: dict | None = None  # beyond the compaction


# the mix topic (connectors/shards/): a round's records are tombstoned two rounds later;
# segments roll every 10 minutes and are compacted soon, so the topic (read from its start by
# every new leader) holds little more than the two newest rounds (with Kafka's defaults, a week
# of every round)
MIX_TOPIC_CONFIGS = {"segment.ms": "600000", "delete.retention.ms": "600000",
                     "min.cleanable.dirty.ratio": "0.1"}


def wanted(cfg: ServeConfig, partitions: int) -> list[Topic]:
    """The topics `serve` with `cfg` uses: events (and labels) with `partitions` each, the
    outputs, the compacted one-partition model, state and control topics, the lease topic
    (one partition per shard) and with `--shards` the mix topic."""
    topics = [Topic(cfg.events_topic, "events topic", partitions)]
    if cfg.labels_topic:
        topics.append(Topic(cfg.labels_topic, "labels topic", partitions))
    for name, role in ((cfg.predictions_topic, "predictions topic"),
                       (cfg.metrics_topic, "metrics topic"),
                       (cfg.dead_letter_topic, "dead-letter topic")):
        if name:
            topics.append(Topic(name, role, None))
    state = cfg.state_topic or f"{cfg.events_topic}.state"
    control = cfg.control_topic or f"{cfg.events_topic}.control"
    for name, role in ((cfg.model_topic, "model topic"), (state, "state topic"),
                       (control, "control topic")):
        topics.append(Topic(name, role, 1, compact=True))
    topics.append(Topic(lease_topic(cfg), "lease topic", cfg.shards, compact=True))
    if cfg.shards > 1:  # connectors/shards/
        topics.append(Topic(cfg.mix_topic or f"{cfg.events_topic}.mix", "mix topic", 1,
                            compact=True, configs=MIX_TOPIC_CONFIGS))
    return topics


def min_insync(replication: int) -> int:
    """min.insync.replicas for a replication factor: 2 from 3 replicas, else 1."""
    return 2 if replication >= 3 else 1


def _describe(admin, names: list[str]) -> dict[str, dict]:
    """{topic: {"partitions", "replication", "cleanup.policy", "min.insync.replicas"}} of the
    topics among `names` that exist."""
    from kafka.admin import ConfigResource, ConfigResourceType

    existing = [t for t in admin.describe_topics(names) if t["error_code"] == 0]
    if not existing:
        return {}
    configs = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, t["name"]) for t in existing],
        config_filter="all")["topic"]
    return {t["name"]: {"partitions": len(t["partitions"]),
                        "replication": min(len(p["replica_nodes"]) for p in t["partitions"]),
                        "cleanup.policy": configs[t["name"]]["cleanup.policy"]["value"],
                        "min.insync.replicas":
                            int(configs[t["name"]]["min.insync.replicas"]["value"])}
            for t in existing}


def _unseen(admin, names: list[str]) -> dict[str, dict]:
    """`_describe` of the topics among `names` (not in the broker's metadata) that the
    controller says exist: a KRaft broker's metadata can lag a topic created an instant ago
    (seen in the tests), and creating it again would fail. Asked with a creation that only
    validates (Kafka's CreateTopics validate_only), then waited for."""
    from kafka.errors import TopicAlreadyExistsError

    if not names:
        return {}
    result = admin.create_topics({name: {} for name in names}, validate_only=True,
                                 raise_errors=False)
    exist = [t["name"] for t in result["topics"]
             if t["error_code"] == TopicAlreadyExistsError.errno]
    admin.wait_for_topics(exist)
    return _describe(admin, exist)


def problems(topics: list[Topic], found: dict[str, dict], replication: int) -> list[str]:
    """One line per setting of an existing topic that `serve` cannot use as wanted."""
    lines = _not_copartitioned(topics, found)
    for topic in topics:
        have = found.get(topic.name)
        if have is None:
            continue
        if topic.partitions is not None and have["partitions"] != topic.partitions and \
                not (lines and topic.role in ("events topic", "labels topic")):  # said once
            lines.append(f"{topic.role} {topic.name!r} has {have['partitions']} partitions, "
                         f"not {topic.partitions}" + ("" if topic.compact else " (--partitions)"))
        if have["replication"] < replication:
            lines.append(f"{topic.role} {topic.name!r} has replication factor "
                         f"{have['replication']}, not {replication} (--replication-factor)")
        if have["min.insync.replicas"] < min_insync(replication):
            lines.append(f"{topic.role} {topic.name!r} has min.insync.replicas "
                         f"{have['min.insync.replicas']}, not {min_insync(replication)}")
        if topic.compact and "compact" not in have["cleanup.policy"]:
            lines.append(f"{topic.role} {topic.name!r} has cleanup.policy="
                         f"{have['cleanup.policy']}, not compact")
    return lines


def _not_copartitioned(topics: list[Topic], found: dict[str, dict]) -> list[str]:
    """The one line saying that the existing events and labels topics differ in partitions."""
    pair = [t for t in topics if t.role in ("events topic", "labels topic") and t.name in found]
    if len(pair) < 2 or found[pair[0].name]["partitions"] == found[pair[1].name]["partitions"]:
        return []
    events, labels = pair
    return [f"events topic {events.name!r} has {found[events.name]['partitions']} partitions "
            f"and labels topic {labels.name!r} {found[labels.name]['partitions']}: they must be "
            "co-partitioned (the same count), or a label lands on another partition than its "
            "event"]


def create(cfg: ServeConfig, partitions: int | None, replication: int | None, out) -> int:
    """Create the topics of `wanted` that are missing, after checking those that exist; each
    line of what was done goes to `out`. Returns the exit status: 0 when every topic is as
    wanted, 1 (after one line per problem, nothing created) when one exists with other settings.

    `partitions` None: the existing events (or labels) topic's count, else
    `DEFAULT_PARTITIONS`; `replication` None: min(3, brokers).
    """
    from river_pa.connectors.kafka.admin import make_admin

    admin = make_admin(cfg)
    try:
        if replication is None:
            replication = min(3, len(admin.describe_cluster()["brokers"]))
        names = [cfg.events_topic, *([cfg.labels_topic] if cfg.labels_topic else [])]
        found = _describe(admin, [t.name for t in wanted(cfg, 1)])
        found.update(_unseen(admin, [t.name for t in wanted(cfg, 1) if t.name not in found]))
        if partitions is None:
            partitions = next((found[n]["partitions"] for n in names if n in found),
                              DEFAULT_PARTITIONS)
        topics = wanted(cfg, partitions)
        lines = problems(topics, found, replication)
        if partitions < cfg.shards:  # serve would refuse them (connectors/shards/)
            lines.append(f"{partitions} partitions for the events and labels topics, and "
                         f"shards is {cfg.shards}: each shard needs one at least")
        if lines:
            for line in lines:
                out(f"river-pa topics: {line}")
            return 1
        missing = {t.name: {"num_partitions": t.partitions or partitions,
                            "replication_factor": replication,
                            "configs": {"min.insync.replicas": str(min_insync(replication)),
                                        **({"cleanup.policy": "compact"} if t.compact else {}),
                                        **(t.configs or {})}}
                   for t in topics if t.name not in found}
        if missing:
            admin.create_topics(missing, wait_for_metadata=True)
    finally:
        admin.close()
    for topic in topics:
        n = topic.partitions or (found[topic.name]["partitions"] if topic.name in found
                                 else partitions)
        what = "exists" if topic.name in found else "created"
        out(f"{what:8}{topic.name} ({topic.role}): {n} partition{'s' * (n != 1)}, replication "
            f"{found.get(topic.name, {}).get('replication', replication)}"
            + (", compacted" if topic.compact else ""))
    return 0


def run(args) -> int:
    """`river-pa topics create` with the parsed flags `args`; returns the exit status (1: a
    topic with other settings, no broker, a configuration error; each one line on stderr)."""
    from kafka.errors import KafkaError

    from river_pa.connectors.config import from_args
    from river_pa.connectors.kafka.diagnostics import explain, quiet_bootstrap, unreachable

    try:  # the topics of the learners' deployment when --shards is given (serve's checks)
        cfg = from_args({**vars(args), "role": "learn" if getattr(args, "shards", None) else None})
    except SystemExit as exc:  # one line naming the setting
        print(str(exc.code).replace("river-pa serve:", "river-pa topics:"), file=sys.stderr)
        return 1
    gone = unreachable(cfg)
    if gone:
        print(f"river-pa topics: {gone}", file=sys.stderr)
        return 1
    try:
        with quiet_bootstrap():
            return create(cfg, args.partitions, args.replication_factor,
                          lambda line: print(line, file=sys.stderr if "topics:" in line else
                                             sys.stdout))
    except KafkaError as exc:
        print(f"river-pa topics: {explain(exc, cfg)}", file=sys.stderr)
        return 1
