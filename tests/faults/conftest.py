"""Fixtures of the fault harness: the 3-broker cluster and Elec2 of tests/kafka (imported,
not copied)."""

from tests.kafka.conftest import cluster_bootstrap, elec2_path  # noqa: F401 (fixtures)
