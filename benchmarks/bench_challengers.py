"""Benchmark the learner's loop with 1, 3 and 10 models (the served one and 0, 2 or 9
challengers) against the models' own cost, in one run (issue 20: decoding and merging must be
paid once, whatever the number of models).

    PYTHONPATH=. python benchmarks/bench_challengers.py [--events 20000] [--repeats 3]

Each repeat, interleaved so a noisy moment hits every figure:

1. The loop: a learner's policy (predicts each event for its metric, emits nothing, learns at
   the label, scores every model) on Elec2 events with their labels DELAY events late, read
   from the in-memory topics of tests/connectors/fake_kafka.py (the protocol of
   connectors/kafka/protocols.py without a broker: the loop's own cost), CPU seconds from the
   first record to the last label learned, for 1, 3 and 10 models.
2. The anchor: each model alone, `predict_proba_one` at each event and `learn_one` at its
   label, CPU seconds over the same rows (the work a model adds, nothing else).

Printed per count of models: labelled events/s of the loop, its time over the 1-model loop's,
and the added time of the extra models over their anchor (1.0: a challenger costs only its
model's work; above 1.0: the loop's per-model bookkeeping: its prediction kept in the pending
store, its metrics, rolling metrics, drift watch and its test against the served model).
Medians over the repeats, with min and max.
"""

from __future__ import annotations

import argparse
import statistics
import time

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.loop import daemon as daemon_module
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.loop.policy import Policy
from river_pa.connectors.replay import elec2, records
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import Cluster, FakeConsumer, FakeProducer
from tests.kafka.conftest import ELEC2

DELAY = 100
ADAPTER = daemon_module.adapter  # the real one (replaced by the fake clients below)
C_VALUES = (1.0, 0.01, 0.03, 0.1, 0.3, 3.0, 10.0, 0.003, 0.5, 2.0)  # the served model's first


class BenchLearner(Daemon):
    """The learner's policy without the lease and the model topic (nothing else differs in
    the per-record path)."""

    policy = Policy(emits=False)


def loop_seconds(rows, models: int) -> float:
    """CPU seconds of the loop learning every label of `rows` with `models` models."""
    import dataclasses

    cluster = Cluster()
    cluster.topic("ev"), cluster.topic("lab")
    cluster.send_all(records(rows, DELAY, start_ms=0), "ev", "lab")
    fake = dataclasses.replace(
        ADAPTER(), make_consumer=lambda cfg: FakeConsumer(cluster, 500),
        make_offsets_client=lambda cfg: FakeConsumer(cluster),
        make_producer=lambda cfg, limits=None: FakeProducer(cluster))
    daemon_module.adapter, daemon_module.topic_limits = (lambda name: fake), (lambda c, t: {})
    challengers = [f'c{i}=PAClassifier{{"C": {c}}}' for i, c in enumerate(C_VALUES[1:models])]
    cfg = ServeConfig(events_topic="ev", labels_topic="lab", metrics_topic=None,
                      report_path=None, checkpoint_path="/dev/null", checkpoint_every=10**9,
                      checkpoint_seconds=10**9, challenger=challengers, control_topic=None)
    learner = BenchLearner(cfg, PAClassifier())
    learner._start = learner.load = lambda: None  # no checkpoint to read
    step, started = learner._step, [None]

    def step_then_check():
        if started[0] is None:
            started[0] = time.process_time()
        step()
        learner.stopping = learner.stats.counts["learned"] >= len(rows)

    learner._step = step_then_check
    learner._final_checkpoint = lambda: None
    learner.run()
    return time.process_time() - started[0]


def anchor_seconds(rows, c: float) -> float:
    """CPU seconds of one model predicting every event and learning its label DELAY later."""
    model, waiting = PAClassifier(C=c), []
    started = time.process_time()
    for x, y in rows:
        model.predict_proba_one(x)
        waiting.append((x, y))
        if len(waiting) > DELAY:
            model.learn_one(*waiting.pop(0))
    for x, y in waiting:
        model.learn_one(x, y)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = elec2(str(ELEC2), args.events)
    anchor_seconds(rows[:500], 1.0), loop_seconds(rows[:500], 10)  # compiled, imported
    counts, loops, anchors = (1, 3, 10), {}, {}
    for _ in range(args.repeats):
        for k in counts:
            loops.setdefault(k, []).append(loop_seconds(rows, k))
        for c in C_VALUES:
            anchors.setdefault(c, []).append(anchor_seconds(rows, c))
    print(f"{args.events} labelled Elec2 events, labels {DELAY} events late, {args.repeats} "
          "repeats (median [min, max])")
    for k in counts:
        per_repeat = [(loops[k][r], loops[1][r],
                       sum(anchors[c][r] for c in C_VALUES[1:k])) for r in range(args.repeats)]
        rate = [args.events / t for t, _, _ in per_repeat]
        over_one = [t / one for t, one, _ in per_repeat]
        line = (f"{k:>2} models: {statistics.median(rate):8.0f} labelled events/s, "
                f"{_spread(over_one)}x the 1-model loop")
        if k > 1:
            added = [(t - one) / extra for t, one, extra in per_repeat]
            line += f"; added time {_spread(added)}x the {k - 1} extra models' own cost"
        print(line)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}, {max(values):.2f}]"


if __name__ == "__main__":
    main()
