"""The `river-pa` command: `evaluate` (progressive validation), `serve` (the Kafka daemon) and
`report` (render a daemon's or an evaluation's report).

Each subcommand lives in its own module and takes its own arguments; this module only
dispatches, so that `river-pa evaluate` never imports the Kafka client and `serve` never
imports the plotting stack.

"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "evaluate": ("river_pa.evaluate.job", "progressive validation of a learner on a data set"),
    "serve": ("river_pa.connectors.cli", "the Kafka daemon: consume events, predict, learn, report"),
    "report": ("river_pa.connectors.report", "render a JSONL report as a learning-curve PNG and table"),
}


def _usage() -> str:
    lines = ["usage: river-pa {" + ",".join(COMMANDS) + "} ...", ""]
    lines += [f"  {name:<9} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand's `main(argv)`; exit status 2 on a usage error."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"river-pa: unknown command {name!r}; choose one of {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
