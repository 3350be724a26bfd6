"""Kafka serving daemon for river_pa learners."""
