"""The fault harness in CI: five short seeded schedules on the 3-broker cluster (both modes,
both clients, one with sharded learners); a violation prints the seed, the schedule and the
command that reproduces it (`python -m tests.faults.soak --seed N ...`).

`CI_KINDS` lists the fault kinds the daemon is known to survive; add a kind once its defect is
fixed (the soak runs them all: `python -m tests.faults.soak --seeds 50`).

"""

from __future__ import annotations

import pytest

from tests.faults.runner import run_schedule
from tests.faults.schedule import Schedule

CI_KINDS = ("kill", "term", "pause", "broker", "members", "replay", "garbage", "pickle", "limit",
            "promote")
MODEL_KINDS = ("models", "kill", "term", "pin")  # the models of a deployment changed live
# five schedules, each a seed, a mode, a client, its kinds and the learners' shards: both
# modes and both clients within the suite's 15 minutes (each schedule costs 20-35 s of a worker); the soak runs every
# combination (seed 47 promotes the challenger while the stream flows, beside a broker stop and
# a forged pickle; seed 180 adds a challenger, SIGKILLs the active learner, then removes it:
# the next term tombstones the snapshots of it the last one published)
SHARD_KINDS = ("kill", "term", "pause", "broker")  # the learners with --shards 2
# (seed 7 kills a shard's active learner, then terminates one, while the stream flows)
CI_RUNS = ((5, True, "kafka-python", CI_KINDS, 1), (9, False, "kafka-python", CI_KINDS, 1),
           (47, True, "confluent", CI_KINDS, 1), (180, False, "confluent", MODEL_KINDS, 1),
           (7, True, "kafka-python", SHARD_KINDS, 2))
LENGTH = 3
N_EVENTS = 1_000


@pytest.mark.parametrize("seed,exactly_once,client,kinds,shards", CI_RUNS, ids=[
    f"seed{s}-{'exactly-once' if eo else 'at-least-once'}-{c}" + (f"-{n}shards" if n > 1 else "")
    for s, eo, c, _, n in CI_RUNS])
def test_invariants_hold_under_a_random_fault_schedule(cluster_bootstrap, elec2_path, tmp_path,
                                                       seed, exactly_once, client, kinds, shards):
    schedule = Schedule.from_seed(seed, kinds, LENGTH, shards=shards)
    result = run_schedule(schedule, exactly_once, cluster_bootstrap, tmp_path, elec2_path,
                          N_EVENTS, client=client)
    assert sum(result.fired.values()) > 0, "\n".join(result.log)
    assert not result.violations, result.message


def test_a_schedule_is_a_function_of_its_seed():
    one = Schedule.from_seed(7, ("kill", "broker"), 5)
    assert one == Schedule.from_seed(7, ("kill", "broker"), 5)
    assert {f.kind for f in one.faults} <= {"kill", "broker"} and len(one.faults) == 5
    assert [f.at for f in one.faults] == sorted(f.at for f in one.faults)
    with pytest.raises(ValueError, match="nope"):
        Schedule.from_seed(7, ("nope",))


def test_kafka_partition_of_a_group_is_javas():
    from tests.kafka.conftest import java_string_hash as java_hash, kafka_partition

    assert java_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert java_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: abs is 0
    assert kafka_partition("polygenelubricants", 50) == 0
    assert kafka_partition("my-group", 50) == abs(java_hash("my-group")) % 50


def test_the_coordinators_are_looked_up_in_the_cluster(cluster_bootstrap):
    from tests.faults.cluster import Cluster

    cluster = Cluster(cluster_bootstrap)
    assert cluster.coordinator("any-group") in {1, 2, 3}
    assert cluster.transaction_coordinator("any-group.learner") in {1, 2, 3}
