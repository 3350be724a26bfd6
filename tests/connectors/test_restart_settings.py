"""Settings given at a restart, applied to a restored state (tests/kafka/test_recovery.py runs
them through the daemon)."""

from __future__ import annotations

from river import metrics

from river_pa.connectors.config import load_config
from river_pa.connectors.state.pending import Pending, PendingStore
from river_pa.connectors.observe.reporting import Stats


def test_new_bounds_apply_to_a_restored_store_oldest_first():
    store = PendingStore(10, None, 10**9)
    for i in range(10):
        store.add(f"e{i}", Pending({}, None, i, 0))  # the store sizes each entry itself
    size = store.nbytes // 10  # ten entries of the same size
    evicted = store.bound(6, 5, 4 * size + size // 2)  # 6 by count, then 4 entries by bytes
    assert [entry.ts for entry in evicted] == [0, 1, 2, 3, 4, 5]
    assert (len(store), store.nbytes) == (4, 4 * size)
    assert [entry.ts for entry in store.expire(12)] == [6]  # the TTL at the next event time
    assert store.bound(6, None, 4 * size) == [] and store.expire(10**9) == []


def test_another_metric_restarts_the_metrics_and_keeps_the_counts():
    stats = Stats([metrics.Accuracy()], 10)
    stats.score(True, True, None)
    assert stats.uses_proba is False
    assert stats.use_metrics([metrics.Accuracy()], 10) is False  # the same: kept
    assert stats.metric.get() == [1.0]
    assert stats.use_metrics([metrics.LogLoss()], 10) is True
    assert (stats.uses_proba, stats.metric[0]._mean.n, stats.counts["labelled"]) == (True, 0, 1)
    stats.score(True, False, None)  # a label predicted before the change: counted, not scored
    stats.score(True, {True: 0.8, False: 0.2}, None)
    assert (stats.metric[0]._mean.n, stats.counts["labelled"]) == (1, 3)
    assert stats.use_metrics([metrics.LogLoss()], 20) is True  # another window
    assert stats.rolling.window_size == 20


def test_allow_empty_state_is_off_unless_given():
    assert load_config(["--role", "learn"], {}).allow_empty_state is False
    assert load_config(["--role", "learn", "--allow-empty-state"], {}).allow_empty_state is True
    env = {"RIVER_PA_ALLOW_EMPTY_STATE": "yes"}
    assert load_config(["--role", "learn"], env).allow_empty_state is True
