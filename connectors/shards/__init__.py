"""Sharded learners mixing their models over Kafka (`river-pa serve --role learn --shards N`)."""
