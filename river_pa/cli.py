"""The `river-pa` command: argparse subcommands, each side imported only when it runs.

* `river-pa evaluate [DATA]`: progressive validation of a learner on a data set or file
  (`river_pa.evaluate.cli`);
* `river-pa serve`: the Kafka daemon (`river_pa.connectors`; its flags are defined with their
  TOML keys and RIVER_PA_* variables in `river_pa.connectors.config`);
* `river-pa report FILE`: the learning curves and summary of a report either of them wrote
  (`river_pa.report`);
* `river-pa topics create`: the Kafka topics `serve` uses, with the settings its roles need
  (`river_pa.connectors.kafka.topics`; the same topic flags as `serve`);
* `river-pa models list | promote NAME | pin NAME VERSION | unpin`: a running deployment's
  models, a challenger made the served model and an earlier version served again, without a
  restart (`river_pa.connectors.models.commands`).

The same things have the same flags in `evaluate` and `serve`: `--model`, `--model-params`,
repeatable `--metric`, `--report-path`. A usage error is one line on stderr with exit status 2.

"""

from __future__ import annotations

import argparse
import math
import os
import sys

__all__ = ["build_parser", "main"]


class _ModelAction(argparse.Action):
    """`--model NAME`, repeatable: each starts a model in `models`, and the `--param` and
    `--model-params` after it (`_ModelParamAction`) are that model's own."""

    def __call__(self, parser, namespace, value, option_string=None):
        namespace.models = [*(namespace.models or []), {"name": value, "param": [],
                                                        "model_params": None}]


class _ModelParamAction(argparse.Action):
    """`--param` (appends) or `--model-params` (sets): the last `--model`'s own, or shared by
    every model before any `--model`."""

    def __call__(self, parser, namespace, value, option_string=None):
        target = namespace.models[-1] if namespace.models else vars(namespace)
        if self.dest == "param":
            target["param"] = [*target["param"], value]
        else:
            target["model_params"] = value


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\n")


def _add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="progressive validation of a learner on a data set",
                       description="Progressive validation: every event is predicted, then "
                       "learned (River's evaluate.iter_progressive_val_score).")
    p.add_argument("data", nargs="?", default="phishing",
                   help="a data set name (an unknown name lists them) or a libsvm (.gz, .bz2, "
                   ".xz, .zst), CSV or JSONL file (default: phishing, River's bundled set)")
    p.add_argument("--target", metavar="COLUMN", help="target column of a CSV file")
    p.add_argument("--task", choices=["binary", "multiclass", "regression"],
                   help="the task (default: the data set's, or inferred from the first "
                   "chunk's labels: two distinct labels binary, other numbers regression, "
                   "anything else multiclass)")
    p.add_argument("--model", dest="models", action=_ModelAction, metavar="MODEL",
                   help="a river_pa class name, or 'module:attribute' naming a River "
                   "estimator class or instance, e.g. a pipeline 'mymodels:model' in "
                   "./mymodels.py (looked up in the current folder first; factories are not "
                   "called) (default by "
                   "task: PAClassifier, PAMultiClassifier, PARegressor); repeat it to compare "
                   "several models in one pass over the same events: one table, one plot")
    p.add_argument("--param", action=_ModelParamAction, default=[], metavar="KEY=VALUE",
                   help="model parameter, repeatable; values read as JSON (numbers, "
                   "true/false/null), else strings; they win over --model-params. After a "
                   "--model: that model's own; before any: every model's")
    p.add_argument("--model-params", action=_ModelParamAction, metavar="JSON",
                   help="JSON object of keyword arguments for the model (default: {}); after "
                   "a --model: that model's own")
    p.add_argument("--params", dest="model_params", action=_ModelParamAction,
                   help=argparse.SUPPRESS)  # the old name
    p.add_argument("--metric", action="append", default=[], metavar="NAME",
                   help="river.metrics class name, repeatable or comma-separated (default by "
                   "task: Accuracy,F1,LogLoss / Accuracy,MacroF1,CrossEntropy / MAE,RMSE,R2)")
    p.add_argument("--delay", type=int, default=0, metavar="N",
                   help="event i's label is learned just before event i+N is predicted "
                   "(River's integer delay: 0 and 1 both mean no delay; default: 0)")
    p.add_argument("--limit", type=int, metavar="N", help="evaluate the first N events only")
    p.add_argument("--every", type=int, default=1000, metavar="N",
                   help="a report snapshot (and progress update) every N events (default: 1000)")
    p.add_argument("--shards", type=int, metavar="N",
                   help="simulate N shards learning the stream (iterative parameter mixing): "
                   "each predicts and learns its events, and every --mix-every labelled events "
                   "the shards' models are averaged, weighted by the events each learned since "
                   "the last mix (river_pa.mix); --shards 1 is the plain run bit for bit. "
                   "Measured at 8 shards mixed every 1,000: +0.7 points of accuracy on a9a, "
                   "-2.6 to -12.4 on phishing-full, mushrooms, elec2, usps and mnist-5k "
                   "(docs/cli.md). Default: no shards")
    p.add_argument("--mix-every", type=int, metavar="K",
                   help="with --shards: mix every K labelled events in total (default: 1000)")
    p.add_argument("--shard-by", choices=["round-robin", "key"],
                   help="with --shards: event i goes to shard i mod N (round-robin, default) "
                   "or crc32(i) mod N (key: the event's number stands for a record key)")
    p.add_argument("--report-path", metavar="PATH.jsonl",
                   help="JSONL report, one snapshot every --every events (river-pa report "
                   "renders it; default: none)")
    p.add_argument("--report", dest="report_path", help=argparse.SUPPRESS)  # the old name
    p.add_argument("--plot", metavar="PATH.png", help="learning curves (default: none)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_evaluate)


def _add_serve(sub, flags: bool) -> None:
    """serve's subparser; its flags (`flags`) only when it may run: their module,
    river_pa.connectors.config, takes 10-50 ms to import that evaluate and report do not need."""
    summary = "the Kafka daemon: consume events, predict, learn, report"
    if not flags:
        sub.add_parser("serve", help=summary)
        return
    from river_pa.connectors import config  # the standard library only

    p = sub.add_parser("serve", help=summary, description=config.__doc__.split("\n\n")[0] +
                       " Defaults shown are the built-in ones.")
    config.add_arguments(p)
    p.set_defaults(run=_run_serve)


# serve's flags that name the topics and the cluster: `topics create` takes them too
TOPIC_FLAGS = ("bootstrap_servers", "events_topic", "labels_topic", "predictions_topic",
               "metrics_topic", "dead_letter_topic", "model_topic", "state_topic", "control_topic",
               "client_id", "kafka")


def _connector_command(sub, name: str, summary: str, flags: bool, module: str):
    """The subparser of command `name` described by the first paragraph of the docstring of
    `river_pa.connectors.<module>`, or None when it will not run (`flags` false: the help
    line only, nothing imported)."""
    if not flags:
        sub.add_parser(name, help=summary)
        return None
    import importlib

    doc = importlib.import_module(f"river_pa.connectors.{module}").__doc__
    return sub.add_parser(name, help=summary, description=doc.split("\n\n")[0])


def _add_topics(sub, flags: bool) -> None:
    summary = ("create the Kafka topics serve uses (events, labels, outputs, model, state, lease, "
               "control)")
    if (p := _connector_command(sub, "topics", summary, flags, "kafka.topics")) is None:
        return
    from river_pa.connectors import config
    from river_pa.connectors.kafka import topics

    actions = p.add_subparsers(title="actions", metavar="{create}", required=True)
    create = actions.add_parser("create", help=summary, description=summary + "; a topic that "
                                "exists with the settings serve needs is left as it is, one "
                                "with other settings is one line naming it, and nothing is "
                                "created (status 1)")
    create.add_argument("--partitions", type=_positive, metavar="N",
                        help="partitions of the events and labels topics (co-partitioned) and "
                        "the outputs (default: the existing events or labels topic's, else "
                        f"{topics.DEFAULT_PARTITIONS})")
    create.add_argument("--replication-factor", type=_positive, metavar="N",
                        help="replicas of every topic (default: min(3, brokers))")
    config.add_arguments(create, only=TOPIC_FLAGS + ("shards", "mix_topic"))
    create.set_defaults(run=_run_topics)


def _add_models(sub, flags: bool) -> None:
    summary = ("the models of a running deployment: list them, promote a challenger, pin an "
               "earlier version (a rollback), add or remove a challenger")
    if (p := _connector_command(sub, "models", summary, flags, "models.commands")) is None:
        return
    from river_pa.connectors import config

    actions = p.add_subparsers(title="actions", dest="action",
                               metavar="{list,promote,pin,unpin,add,remove}", required=True)
    listing = actions.add_parser("list", help="the served model and each challenger: metrics, "
                                 "events learned, test against the served model (from the "
                                 "learner's newest report in the metrics topic), and the "
                                 "versions the model topic keeps")
    listing.add_argument("--json", action="store_true",
                         help="the report, with the versions, as one JSON line")
    promote = actions.add_parser("promote", help="make challenger NAME the served model "
                                 "(a control record the learner obeys at its next batch)")
    promote.add_argument("name", metavar="NAME", help="the challenger's --challenger name")
    pin = actions.add_parser("pin", help="make the predictors serve version VERSION of model "
                             "NAME from the model topic until unpin or a promotion (the "
                             "learner learns on); `list` names the versions")
    pin.add_argument("name", metavar="NAME", help="the model the version is of")
    pin.add_argument("version", metavar="VERSION", type=_positive,
                     help="a version the model topic keeps (--keep-versions)")
    unpin = actions.add_parser("unpin", help="serve the live model again")
    add = actions.add_parser("add", help="learn challenger NAME from now on (SPEC: one of "
                             "river-pa's learners, with its parameters as JSON)")
    add.add_argument("name", metavar="NAME", help="the new challenger's name")
    add.add_argument("spec", metavar="SPEC", help="e.g. 'PAClassifier{\"C\": 0.1}'")
    add.add_argument("--backfill", action="store_true",
                     help="learn the events and labels topics' retained history first (in the "
                     "background), then join the live models")
    remove = actions.add_parser("remove", help="stop learning challenger NAME (its model and "
                                "metrics are dropped)")
    remove.add_argument("name", metavar="NAME", help="the challenger's name")
    for action in (promote, pin, unpin, add, remove):
        action.add_argument("--wait", type=_seconds, default=60, metavar="SECONDS",
                            help="wait up to this long for the learner's report that it obeyed "
                            "(status 0 when it did, 1 when it was skipped or refused, or no "
                            "report came in time); 0: exit once written (default: 60)")
    for action in (listing, promote, pin, unpin, add, remove):
        config.add_arguments(action, only=TOPIC_FLAGS + ("checkpoint_key",))
        action.set_defaults(run=_run_models, json=False, backfill=False)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 86_400:  # nan, inf and a typo of days refused
        raise argparse.ArgumentTypeError(f"must be seconds from 0 to 86400, got {text!r:.60}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # not a number, or beyond Python's 4300 digits
        raise argparse.ArgumentTypeError(f"must be a whole number > 0, got {text!r:.60}") \
            from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r:.60}")
    return value


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="render a report of evaluate or serve: PNG and table",
                       description="Learning curves of every snapshot of a JSONL report "
                       "(written by evaluate --report-path or serve --report-path) and a table "
                       "of the last one.")
    p.add_argument("file", help="JSONL report")
    p.add_argument("--png", help="output image (default: FILE with .png)")
    p.set_defaults(run=_run_report)


def _run_evaluate(args) -> int:
    from river_pa.evaluate.cli import run

    return run(args)


def _run_serve(args) -> int:
    from river_pa.connectors.cli import run

    return run(args)


def _run_topics(args) -> int:
    from river_pa.connectors.kafka.topics import run

    return run(args)


def _run_models(args) -> int:
    from river_pa.connectors.models.commands import run

    return run(args)


def _run_report(args) -> int:
    from river_pa.report import main

    return main(args.file, args.png)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `river-pa` parser with its subcommands; `command`, if given, is the one about to
    run (the flags of serve and topics are defined only for themselves)."""
    from river_pa import __version__

    parser = _Parser(prog="river-pa", description="Passive-Aggressive and parameter-free "
                     "online learners for River: evaluate on files, serve on Kafka.")
    parser.add_argument("--version", action="version", version=f"river-pa {__version__}")
    sub = parser.add_subparsers(title="commands",
                                metavar="{evaluate,serve,report,topics,models}")
    _add_evaluate(sub)
    _add_serve(sub, command not in ("evaluate", "report", "topics", "models"))
    _add_report(sub)
    _add_topics(sub, command not in ("evaluate", "report", "serve", "models"))
    _add_models(sub, command not in ("evaluate", "report", "serve", "topics"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `river-pa` with `argv` (default: sys.argv[1:]); returns the exit status.

    >>> main(["report"])
    2

    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 1
    if not hasattr(args, "run"):
        parser.print_usage(sys.stderr)
        return 2
    try:
        status = args.run(args) or 0
        sys.stdout.flush()  # here, not at exit: a reader that left raises now, not in Python
        return status
    except BrokenPipeError:  # `river-pa report FILE | head`: the reader left, end quietly
        return _reader_left()


def _reader_left() -> int:
    """Point stdout at /dev/null (Python flushes it again at exit, which would raise anew:
    the recipe of the `signal` module's note on SIGPIPE) and return 141, the status of a
    process that SIGPIPE ended."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13


if __name__ == "__main__":
    sys.exit(main())
