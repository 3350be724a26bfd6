"""One report for `river-pa evaluate` and `river-pa serve`: format, metric lookup, plot, table.

A report is a JSONL file, one snapshot a line, oldest first. Every snapshot has

* ``events``: events seen so far (int);
* ``metrics``: ``{metric name: cumulative value}`` (River's progressive validation);
* optionally ``rolling``: ``{metric name: value over the last window labels}`` and ``window``;
* any other figures (counts, throughput, the run's model and data...), numbers, strings,
  or one level of dicts of them.

`river-pa report FILE` draws the learning curves of every snapshot (`plot`) and prints the last
one as a table (`summary_table`), whichever command wrote the file.

"""

from river_pa.report.metrics import fitting, make_metrics, metric_names
from river_pa.report.render import (append, check_output, comparison_table, create, load, main,
                                    plot, print_comparison, print_summary, summary_table, write)

__all__ = ["append", "check_output", "comparison_table", "create", "fitting", "load", "main",
           "make_metrics", "metric_names", "plot", "print_comparison", "print_summary",
           "summary_table", "write"]
