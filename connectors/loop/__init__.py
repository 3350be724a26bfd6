"""The serving loop: poll, order by event time, process, emit, checkpoint and commit (or roll
back), with the positions and flow control of the consumer."""
