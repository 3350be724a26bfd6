"""Fault-injection harness for the Kafka serving daemon (see tests/faults/runner.py)."""
