"""The event-time ordering of loop/ordering.py on records of the fake client: a label is seen
before an event of the same time, a record is held back while the other side could still hold
an older one, and the learner's order over every partition is one timestamp order."""

from __future__ import annotations

from river_pa.connectors.loop.ordering import EventTimeOrder

from tests.connectors.fake_kafka import TP, Cluster


def _filled(cluster: Cluster, stamps: dict) -> dict:
    """Append records at the given timestamps ({(topic, partition): [ts, ...]})."""
    for (topic, partition), times in stamps.items():
        cluster.topic(topic, partition + 1)
        for ts in times:
            cluster.append(topic, b"{}", timestamp=ts, partition=partition)
    return {tp: list(log) for tp, log in cluster.logs.items()}


def _seen(records) -> list[tuple[str, int, int]]:
    return [(r.topic[0], r.partition, r.timestamp) for r in records]


def test_a_label_comes_before_an_event_of_its_time_and_waits_for_the_other_side(cluster):
    logs = _filled(cluster, {("ev", 0): [1, 3, 5], ("lab", 0): [3, 4]})
    exhausted = set()
    order = EventTimeOrder("ev", "lab", exhausted.__contains__, TP)
    for tp, records in logs.items():
        order.add(tp, records)
    # e@5 waits: the labels partition, empty now, could still hold a label older than 5
    assert _seen(order.ready()) == [("e", 0, 1), ("l", 0, 3), ("e", 0, 3), ("l", 0, 4)]
    assert order.size(TP("ev", 0)) == 1
    exhausted.add(TP("lab", 0))  # read to its end: nothing older can come
    assert _seen(order.ready()) == [("e", 0, 5)]


def test_events_alone_are_released_in_offset_order(cluster):
    logs = _filled(cluster, {("ev", 0): [9, 2, 7]})  # timestamps need not grow
    order = EventTimeOrder("ev", None, lambda tp: False, TP)
    order.add(TP("ev", 0), logs[TP("ev", 0)])
    assert [r.offset for r in order.ready()] == [0, 1, 2]


def test_the_whole_stream_is_one_timestamp_order_over_every_partition(cluster):
    logs = _filled(cluster, {("ev", 0): [1, 6], ("ev", 1): [2, 4], ("lab", 0): [4], ("lab", 1): [7]})
    assigned = set(logs)
    exhausted = set()
    order = EventTimeOrder("ev", "lab", exhausted.__contains__, TP, lambda: assigned)
    for tp, records in logs.items():
        order.add(tp, records)
    # lab:0 @4 before ev:1 @4 (labels first); then lab:0 is empty and could still hold a
    # label older than 4: everything waits until it is read to its end
    assert _seen(order.ready()) == [("e", 0, 1), ("e", 1, 2), ("l", 0, 4)]
    exhausted.add(TP("lab", 0))
    assert _seen(order.ready()) == [("e", 1, 4)]  # now ev:1 is empty, likewise
    exhausted.update(assigned)
    assert _seen(order.ready()) == [("e", 0, 6), ("l", 1, 7)]


def test_an_empty_partition_not_read_to_its_end_holds_the_whole_stream_back(cluster):
    logs = _filled(cluster, {("ev", 0): [5], ("ev", 1): []})
    exhausted = set()
    order = EventTimeOrder("ev", None, exhausted.__contains__, TP, lambda: set(logs))
    order.add(TP("ev", 0), logs[TP("ev", 0)])
    assert list(order.ready()) == []
    exhausted.add(TP("ev", 1))
    assert _seen(order.ready()) == [("e", 0, 5)]


def test_truncate_keeps_the_oldest_and_says_where_the_dropped_ones_start(cluster):
    logs = _filled(cluster, {("ev", 0): [1, 2, 3, 4, 5]})
    order = EventTimeOrder("ev", None, lambda tp: True, TP)
    order.add(TP("ev", 0), logs[TP("ev", 0)])
    assert order.truncate(TP("ev", 0), 2) == 2  # offsets 2, 3, 4 dropped: fetched again
    assert order.truncate(TP("ev", 0), 2) is None
    assert [r.offset for r in order.ready()] == [0, 1]


def test_a_label_written_after_a_later_event_was_released_is_counted_late(cluster):
    # ev@5 is released once lab:0 is read to its end; a label @4 written afterwards comes
    # after it: late (a replay orders it before ev@5). The keys are kept per merge.
    logs = _filled(cluster, {("ev", 0): [1, 5], ("lab", 0): [1]})
    order = EventTimeOrder("ev", "lab", lambda tp: True, TP)
    latest: dict = {}
    for tp, records in logs.items():
        order.add(tp, records)
    released = list(order.ready())
    assert [order.late(r, latest) for r in released] == [False, False, False]
    assert latest == {0: (5, True, 0, 1)}  # (timestamp, an event, partition, offset)
    cluster.append("lab", b"{}", timestamp=4, partition=0)
    order.add(TP("lab", 0), list(cluster.logs[TP("lab", 0)])[1:])
    (label,) = order.ready()
    assert order.late(label, latest) and latest == {0: (5, True, 0, 1)}
    cluster.append("ev", b"{}", timestamp=5, partition=0)  # same time, after: in order
    order.add(TP("ev", 0), list(cluster.logs[TP("ev", 0)])[2:])
    (event,) = order.ready()
    assert not order.late(event, latest) and latest == {0: (5, True, 0, 2)}
    whole = EventTimeOrder("ev", "lab", lambda tp: True, TP, lambda: set(logs))
    assert not whole.late(label, latest) and latest[-1] == (4, False, 0, 1)  # one merge: -1


def test_a_partition_read_to_its_end_holds_the_others_back_for_the_idle_time(cluster):
    # --merge-idle-ms: lab:0 is exhausted and empty; ev@5 waits until it has stayed so for
    # idle_s, and a label written meanwhile (@4) still comes first
    logs = _filled(cluster, {("ev", 0): [5], ("lab", 0): []})
    now = [100.0]
    order = EventTimeOrder("ev", "lab", lambda tp: True, TP, idle_s=0.5, clock=lambda: now[0])
    order.add(TP("ev", 0), logs[TP("ev", 0)])
    assert _seen(order.ready()) == []  # lab:0 quiet since 100.0
    now[0] = 100.4
    assert _seen(order.ready()) == []
    cluster.append("lab", b"{}", timestamp=4, partition=0)
    order.add(TP("lab", 0), list(cluster.logs[TP("lab", 0)]))
    assert _seen(order.ready()) == [("l", 0, 4)]  # in order; lab:0 is empty again: a new wait
    now[0] = 100.8
    assert _seen(order.ready()) == []
    now[0] = 101.3
    assert _seen(order.ready()) == [("e", 0, 5)]
    whole = EventTimeOrder("ev", "lab", lambda tp: True, TP, lambda: {TP("ev", 0), TP("lab", 0)},
                           idle_s=0.5, clock=lambda: now[0])
    cluster.append("ev", b"{}", timestamp=6, partition=0)
    whole.add(TP("ev", 0), list(cluster.logs[TP("ev", 0)])[1:])
    assert _seen(whole.ready()) == []  # the learner's merge likewise
    now[0] = 101.8
    assert _seen(whole.ready()) == [("e", 0, 6)]


def test_empty_partitions_wait_for_the_idle_time_together(cluster):
    logs = _filled(cluster, {("ev", 0): [5], ("ev", 1): [], ("lab", 0): [], ("lab", 1): []})
    now = [10.0]
    order = EventTimeOrder("ev", "lab", lambda tp: True, TP, lambda: set(logs), idle_s=0.5,
                           clock=lambda: now[0])
    order.add(TP("ev", 0), logs[TP("ev", 0)])
    assert _seen(order.ready()) == []  # three empty partitions, quiet since 10.0 all
    now[0] = 10.5
    assert _seen(order.ready()) == [("e", 0, 5)]  # one wait, not three


def test_a_partition_emptied_long_after_it_was_read_to_its_end_still_waits_the_idle_time(cluster):
    # the learner's end offsets are those of its last poll, and a batch can run for seconds:
    # lab:0 was read to its end at 10.0 with a label still buffered, and its buffer empties at
    # 11.0 while the learner works through a backlog; a label written meanwhile is not fetched
    # yet, so ev@9 must wait idle_s from 11.0 (as Kafka Streams' max.task.idle.ms counts from a
    # partition found empty), not go at once because lab:0 was read to its end long before
    # (helper-41: 991 late labels of 1,500 written in a burst 0.9 s into a pre-filled stream)
    logs = _filled(cluster, {("ev", 0): [1, 9], ("lab", 0): [2]})
    now = [10.0]
    order = EventTimeOrder("ev", "lab", lambda tp: True, TP, lambda: set(logs), idle_s=0.5,
                           clock=lambda: now[0])
    order.add(TP("lab", 0), logs[TP("lab", 0)])
    assert _seen(order.ready()) == []  # ev:0 empty, quiet from 10.0: lab@2 waits
    now[0] = 11.0
    order.add(TP("ev", 0), logs[TP("ev", 0)])
    assert _seen(order.ready()) == [("e", 0, 1), ("l", 0, 2)]  # lab:0 empty now: a new wait
    now[0] = 11.4
    assert _seen(order.ready()) == []
    now[0] = 11.5
    assert _seen(order.ready()) == [("e", 0, 9)]
