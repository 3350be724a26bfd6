"""What a daemon keeps: checkpoint files, chunked snapshots in compacted topics, the pending
store of events waiting for their labels, and the recovery of all three at start."""
