"""`river-pa models list | promote NAME | pin NAME VERSION | unpin`: the models of a running
deployment, and the commands that change which one serves without a restart.

Each command writes a control record (models/control.py) to the deployment's control topic;
the learner obeys it between two batches. `promote` (a name that the learner's newest report
does not list as a challenger is refused, status 1): the challenger serves, its metrics
continue as the served model's, the former served model goes on as a challenger, the model
topic gets the new served model at once and every predictor swaps it in at its next poll
(predictions name the model and its version). `pin` (a version the model topic does not hold
verified is refused, status 1): the predictors serve that earlier version until `unpin` or a
promotion (models/pinning.py). Each waits (`--wait`) for the learner's report of what became
of its record and says it (status 0 when obeyed). `list` prints the served model and each
challenger with their metrics, events learned and their test against the served model, from
the learner's newest report in the metrics topic, and the versions the model topic keeps of
each (the served model's, and each challenger's own: models/publishing.py).
All take serve's flags (the same TOML keys and RIVER_PA_* variables), so the topics are the
deployment's.

"""

from __future__ import annotations

import json
import sys
import time

__all__ = ["newest_report", "run"]

REPORTS_READ = 500  # records read back from the end of each metrics partition


def run(args) -> int:
    """The action of `args` (river_pa/cli.py); 0, or 1 with one line on stderr (a setting, no
    broker, nothing to list)."""
    from kafka.errors import KafkaError

    from river_pa.connectors.config import from_args
    from river_pa.connectors.kafka.diagnostics import explain, quiet_bootstrap, unreachable

    try:
        cfg = from_args(vars(args))
    except SystemExit as exc:  # one line naming the setting
        print(str(exc.code).replace("river-pa serve:", "river-pa models:"), file=sys.stderr)
        return 1
    if gone := unreachable(cfg):
        print(f"river-pa models: {gone}", file=sys.stderr)
        return 1
    actions = {"promote": _promote, "pin": _pin, "unpin": _unpin, "add": _add,
               "remove": _remove, "list": _list}
    try:
        with quiet_bootstrap():
            return actions[args.action](cfg, args)
    except KafkaError as exc:
        print(f"river-pa models: {explain(exc, cfg)}", file=sys.stderr)
        return 1


def _promote(cfg, args) -> int:
    from river_pa.connectors.models.challengers import NAME
    from river_pa.connectors.state.recovery import FORMER

    name = args.name
    if not (NAME.fullmatch(name) or name == FORMER):
        print(f"river-pa models: NAME must be a challenger's name (1-64 of a-z A-Z 0-9 _ . -) "
              f"or {FORMER!r}, got {name!r:.80}", file=sys.stderr)
        return 1
    report = newest_report(cfg)
    if report is not None and name not in report["challengers"] and name != report.get("served"):
        print(f"river-pa models: no challenger {name!r:.80} in the learner's newest report "
              f"(served: {report.get('served')}; challengers: "
              f"{', '.join(report['challengers']) or 'none'}); nothing written", file=sys.stderr)
        return 1
    if report is None:
        print(f"river-pa models: no learner report in {cfg.metrics_topic} to check "
              f"{name!r:.80} against; written anyway (a learner obeys it only if it has "
              "that challenger)", file=sys.stderr)
    return _command(cfg, ("promote", name, None), args.wait, report, PROMOTED, _serves(name))


def _serves(name: str):
    """Whether a learner's report says `name` serves (`FORMER`: no challenger is the former
    served model), and who serves, in words: a promote's effect."""
    from river_pa.connectors.state.recovery import FORMER

    def serves(report: dict) -> tuple[bool, str]:
        served = report.get("served")
        return (served == name or (name == FORMER and FORMER not in
                                   (report.get("challengers") or {}))), f"{served!r} serves now"

    return serves


def _pin(cfg, args) -> int:
    report = newest_report(cfg)
    versions = _versions(cfg, [args.name, *_names(report)])
    found = next((v for v in versions if v["version"] == args.version), None)
    if found is None or found["name"] != args.name:
        kept = ", ".join(f"{v['version']} ({v['name']})" for v in versions) or "none"
        whose = "" if found is None else f": it is of {found['name']!r:.80}"
        print(f"river-pa models: {cfg.model_topic} holds no version {args.version} of "
              f"{args.name!r:.80}{whose} (versions that verify: {kept}); nothing written",
              file=sys.stderr)
        return 1

    def pinned(report: dict) -> tuple[bool, str]:
        pin = report.get("pinned")
        return pin == {"name": args.name, "version": args.version}, f"pinned now: {pin}"

    return _command(cfg, ("pin", args.name, args.version), args.wait, report, ("pinned",),
                    pinned)


def _unpin(cfg, args) -> int:
    def unpinned(report: dict) -> tuple[bool, str]:
        return report.get("pinned") is None, f"pinned now: {report.get('pinned')}"

    return _command(cfg, ("unpin", "", None), args.wait, newest_report(cfg),
                    ("unpinned", "not pinned"), unpinned)


def _add(cfg, args) -> int:
    from river_pa.connectors.models.challengers import NAME
    from river_pa.connectors.models.control import MAX_VALUE_BYTES
    from river_pa.connectors.models.live import check_spec
    from river_pa.registry import make_model

    try:
        if not NAME.fullmatch(args.name):
            raise ValueError(f"NAME must be 1-64 of a-z A-Z 0-9 _ . -, got {args.name!r:.80}")
        if len(args.spec) > MAX_VALUE_BYTES // 2:  # the record would be skipped
            raise ValueError(f"SPEC of {len(args.spec)} characters (at most "
                             f"{MAX_VALUE_BYTES // 2}): {args.spec!r:.80}")
        make_model(*check_spec(args.name, args.spec))
    except ValueError as exc:
        print(f"river-pa models: {exc}; nothing written", file=sys.stderr)
        return 1
    report = newest_report(cfg)
    if report is not None and args.name in (report.get("served"), *report["challengers"]):
        print(f"river-pa models: the learner has a model named {args.name!r} (remove it "
              "first); nothing written", file=sys.stderr)
        return 1

    def learns(report: dict) -> tuple[bool, str]:
        return args.name in _learning(report), _challengers_now(report)

    return _command(cfg, ("add", args.name, None, args.spec, args.backfill), args.wait, report,
                    ("added", "added, backfilling"), learns)


def _remove(cfg, args) -> int:
    report = newest_report(cfg)
    if report is not None and args.name not in _learning(report):
        print(f"river-pa models: no challenger {args.name!r:.80} in the learner's newest report "
              f"(challengers: {', '.join(report['challengers']) or 'none'}); nothing written",
              file=sys.stderr)
        return 1
    pinned = (report or {}).get("pinned")
    if isinstance(pinned, dict) and pinned.get("name") == args.name:
        print(f"river-pa models: version {pinned.get('version')} of {args.name!r:.80} is pinned "
              "(`river-pa models unpin` first); nothing written", file=sys.stderr)
        return 1

    def dropped(report: dict) -> tuple[bool, str]:
        return args.name not in _learning(report), _challengers_now(report)

    return _command(cfg, ("remove", args.name, None), args.wait, report, ("removed",), dropped)


def _learning(report: dict) -> set:
    """The names of a learner's report's challengers, the backfilling ones too."""
    return {*report["challengers"], *(report.get("backfilling") or {})}


def _challengers_now(report: dict) -> str:
    return f"challengers now: {', '.join(sorted(_learning(report))) or 'none'}"


TRIES = 3  # writes of a command that another one got ahead of


def _command(cfg, command: tuple, wait_s: float, report: dict | None, obeyed: tuple,
             holds) -> int:
    """Write control record `command` ((command, model, version[, spec, backfill])) and wait
    up to `wait_s` for the learner's report of what became of it: status 0 when its outcome
    is one of `obeyed` (or, when the report no longer names it, `holds(report)` says the
    command's effect holds), else 1; written again (up to `TRIES` times) when another command
    got ahead of it."""
    from river_pa.connectors.kafka.admin import ensure_topic
    from river_pa.connectors.models.control import OVERTAKEN

    ensure_topic(cfg, cfg.control_topic)
    after_ms = report["time_ms"] if report is not None else -1
    what = " ".join(str(part) for part in command[:4] if part not in ("", None))
    for attempt in range(1, TRIES + 1):
        offset = _write(cfg, *command)
        written = f"{what}: control record {offset} of {cfg.control_topic}"
        if not wait_s:
            print(f"{written}; not waited for: the learner obeys it at its next batch, or skips "
                  "it if another command was written first (its log says which; `river-pa "
                  "models list --json` shows it)")
            return 0
        status, said = _outcome(cfg, offset, wait_s, after_ms, obeyed, holds)
        if OVERTAKEN in said and attempt < TRIES:
            print(f"{written}{said}; written again", file=sys.stderr)
            continue
        print(f"{written}{said}", file=sys.stderr if status else sys.stdout)
        return status


def _write(cfg, command: str, name: str, version: int | None, spec: str | None = None,
           backfill: bool = False) -> int:
    """Write control record `command` for model `name` (and `version`, `spec`, `backfill`) at
    the control topic's end (the offset it is signed for: models/control.py); its offset."""
    from kafka import KafkaProducer, TopicPartition

    from river_pa.connectors.kafka import CLIENT_DEFAULTS
    from river_pa.connectors.kafka.client import client_settings
    from river_pa.connectors.models.control import encode

    tp = TopicPartition(cfg.control_topic, 0)
    consumer = _reader(cfg)
    try:
        end = consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()
    key = cfg.checkpoint_key.encode() if cfg.checkpoint_key else None
    record_key, value, headers = encode(command, name, key, cfg.control_topic, at=end,
                                        version=version, spec=spec, backfill=backfill)
    producer = KafkaProducer(bootstrap_servers=cfg.bootstrap_servers,
                             client_id=f"{cfg.client_id}-models", acks="all",
                             **{**CLIENT_DEFAULTS, **client_settings(cfg.kafka, KafkaProducer)})
    try:
        return producer.send(cfg.control_topic, value, key=record_key,
                             headers=headers).get(30).offset
    finally:
        producer.close()


PROMOTED = ("promoted", "the served model already")  # control.py's outcomes of a promote obeyed


def _outcome(cfg, offset: int, wait_s: float, after_ms: int, obeyed: tuple,
             holds) -> tuple[int, str]:
    """Wait up to `wait_s` for a learner's report newer than `after_ms` (its report before the
    record was written) that handled control record `offset`: (0 when obeyed, else 1; what
    became of the record, in words that follow the record's name)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        report = newest_report(cfg, max(deadline - time.monotonic(), 1)) or {}
        control = report.get("control") or {}
        if (control.get("topic") == cfg.control_topic and report.get("time_ms", -1) > after_ms
                and isinstance(control.get("next_offset"), int)
                and control["next_offset"] > offset):
            outcome = (control.get("outcomes") or {}).get(str(offset))
            if isinstance(outcome, str):
                ok = outcome in obeyed
            else:  # the learner restarted since, or many records came after it
                ok, now = holds(report)
                outcome = f"handled; {now}"
            return (0 if ok else 1), f": {outcome}"
        time.sleep(1)
    return 1, (f"; no report of a learner says it was handled within {wait_s:g} s (is a "
               "learner running? it stays in the topic and a learner obeys it when it reads "
               "it)")


def _list(cfg, args) -> int:
    report = newest_report(cfg)
    if report is None:
        print(f"river-pa models: no learner report in {cfg.metrics_topic} (a learner writes "
              "one every --report-every events)", file=sys.stderr)
        return 1
    versions = _versions(cfg, _names(report))
    if args.json:
        print(json.dumps({**report, "versions": versions}, sort_keys=True))
        return 0
    age = time.time() - report.get("time_ms", 0) / 1000
    pin = report.get("pinned")
    serving = (f"pinned: the predictors serve version {pin.get('version')} of {pin.get('name')}"
               if isinstance(pin, dict) else "no model version published (none yet, or "
               "--role both, which publishes none)" if report.get("model_version") is None else
               f"model version {report['model_version']} ({report.get('model_learned')} events "
               "learned when published)")
    print(f"report of {age:.0f} s ago; {serving}; control records skipped: "
          f"{report.get('control_skipped', 0)}")
    rows = [(report.get("served", "?"), "served", report)]
    rows += [(n, "challenger", c) for n, c in report["challengers"].items()]
    rows += [(n, "backfilling", {"learned": b.get("labels", 0)})
             for n, b in (report.get("backfilling") or {}).items()]
    print(f"{'model':<28} {'role':<10} {'learned':>9} {'metrics':<36} versus served")
    for name, role, figures in rows:
        duel = figures.get("versus_served")
        versus = "" if duel is None else (
            f"better {duel['better']} worse {duel['worse']} p={duel['p_value']:.3g}"
            f"{' BEATS' if duel['beats'] else ''}")
        metrics = ", ".join(f"{k} {v:.4g}" for k, v in (figures.get("metrics") or {}).items()
                            if isinstance(v, (int, float)))
        print(f"{name:<28.28} {role:<10} {figures.get('learned', 0):>9} {metrics:<36.36} {versus}")
    print(f"versions in {cfg.model_topic} (`river-pa models pin NAME VERSION`): "
          + ("; ".join(map(_version_text, versions)) or "none that verifies"))
    return 0


def _names(report: dict | None) -> list:
    """The served model's and the challengers' names in a learner's `report`."""
    return [report.get("served"), *report["challengers"]] if report else []


def _version_text(v: dict) -> str:
    again = "" if v["pinned"] is None else f", version {v['pinned']} pinned"
    return f"{v['version']} {v['name']} ({v['learned']} events learned{again})"


def _versions(cfg, names) -> list[dict]:
    """The versions of the model topic that verify (signed with --checkpoint-key, when
    given): the served model's snapshots and those of each model of `names` as a challenger
    (`model@NAME`), oldest first: {"version", "name", "snapshot" (where it is), "learned",
    "published_at_ms", "pinned" (the version a pin published again, or None)}."""
    consumer = _reader(cfg)
    try:
        snapshots = ["model", *(f"model@{n}" for n in dict.fromkeys(names) if isinstance(n, str))]
        found = [v for snapshot in snapshots for v in _verified_versions(cfg, consumer, snapshot)]
        return sorted(found, key=lambda v: v["version"])
    finally:
        consumer.close()


def _verified_versions(cfg, consumer, snapshot: str) -> list[dict]:
    """`_versions` of one snapshot of the model topic, read with `consumer`."""
    from river_pa.connectors.state import checkpoint, snapshots

    reader = snapshots.Reader(consumer, cfg.model_topic, snapshot, lambda reason: None)
    reader.read_to_end(30)
    key = cfg.checkpoint_key.encode() if cfg.checkpoint_key else None
    found = []
    for manifest, payload in reader.candidates():
        stamp = dict(zip(("term", "version"), snapshots.stamp(manifest)))
        try:  # whatever model it holds, checked like a predictor checks it
            _, state = checkpoint.loads(payload, None, key, "a model version", stamp)
        except checkpoint.CheckpointError:
            continue
        if isinstance(state, dict) and type(state.get("learned")) is int:
            pinned = state.get("pinned")
            found.append({"version": manifest["version"], "name": str(state.get("name")),
                          "snapshot": snapshot, "learned": state["learned"],
                          "published_at_ms": state.get("published_at_ms"),
                          "pinned": pinned if type(pinned) is int else None})
    return found


def newest_report(cfg, timeout_s: float = 30) -> dict | None:
    """The newest report of `cfg.metrics_topic` that names challengers (a learner's) of
    `cfg.events_topic`, among the last `REPORTS_READ` records of each partition; None when
    there is none."""
    from kafka import TopicPartition

    consumer = _reader(cfg)
    try:
        tps = [TopicPartition(cfg.metrics_topic, p)
               for p in sorted(consumer.partitions_for_topic(cfg.metrics_topic) or ())]
        if not tps:
            return None
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, max(ends[tp] - REPORTS_READ, 0))
        best, deadline = None, time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(consumer.position(tp) < ends[tp] for tp in tps):
            for records in consumer.poll(500).values():
                for record in records:
                    best = _newer(best, record.value, cfg.events_topic)
        return best
    finally:
        consumer.close()


def _reader(cfg):
    """A group-less kafka-python consumer of the deployment's cluster (the command's client),
    read_committed: a version an `--exactly-once` learner aborted is no version (helper-36:
    `list` showed 38 versions where 6 were committed, and `pin` wrote a record for an aborted
    one the learner then refused)."""
    from kafka import KafkaConsumer

    from river_pa.connectors.kafka import CLIENT_DEFAULTS
    from river_pa.connectors.kafka.client import client_settings

    return KafkaConsumer(bootstrap_servers=cfg.bootstrap_servers, group_id=None,
                         client_id=f"{cfg.client_id}-models", enable_auto_commit=False,
                         **{**CLIENT_DEFAULTS, **client_settings(cfg.kafka, KafkaConsumer),
                            "isolation_level": "read_committed"})


def _newer(best: dict | None, value: bytes | None, events: str) -> dict | None:
    try:
        report = json.loads(value)
    except (TypeError, ValueError, RecursionError):
        return best
    if not (isinstance(report, dict) and isinstance(report.get("challengers"), dict)
            and isinstance(report.get("time_ms"), int) and report.get("events_topic") == events):
        return best  # not a learner's report, or another deployment's (a shared metrics topic)
    return report if best is None or report["time_ms"] >= best["time_ms"] else best
