"""The daemon's errors, under one root, and the exit status each one ends `river-pa serve` with.

Every exception class of the daemon derives from `DaemonError`; the ones that end a run are
mapped to an exit status (and the prefix of its one line on stderr) by `EXIT_STATUSES`, the
table `cli` maps through. The Kafka client's own errors are named in `kafka/errors.py`.
This module imports the standard library only (the command line reads it before any client).
"""

from __future__ import annotations

__all__ = ["BadRecordError", "CheckpointError", "DaemonError", "EXIT_STATUSES", "LeaseLost",
           "ModelError", "OutputError", "OutputTooLarge", "SettingsConflict", "SnapshotError",
           "VersionMismatch", "exit_status"]


class DaemonError(RuntimeError):
    """The root of the daemon's errors."""


class CheckpointError(DaemonError):
    """A checkpoint that must not be loaded, with the reason."""


class VersionMismatch(CheckpointError):
    """A checkpoint that verifies but was written by another version or for another model."""


class SnapshotError(DaemonError):
    """A snapshot in the topic that cannot be read, with the reason."""


class ModelError(DaemonError):
    """The model raised on `MODEL_FAILURES_TO_STOP` records in a row: it is broken, not the data."""


class OutputError(DaemonError):
    """An output that could not be written: the daemon stops before committing the offsets
    that cover it, so a restart serves those records again."""


class OutputTooLarge(OutputError):
    """The broker refused a batch as too large: a topic's max.message.bytes was lowered since
    it was read (the daemon reads the limits again and sends with a new producer)."""


class LeaseLost(DaemonError):
    """The active learner no longer holds the lease: it must write nothing more."""


class BadRecordError(DaemonError, ValueError):
    """The root of `codec.BadRecord`: a record the daemon cannot use (dead-lettered)."""


class SettingsConflict(SystemExit, DaemonError):
    """Settings each valid alone but not together: status 2, like a bad flag."""


# (error class, exit status, prefix of its line on stderr: None when the Kafka client's
# `explain` says why); the first class that matches wins. A Kafka client error is status 1.
EXIT_STATUSES = (
    (CheckpointError, 3, "checkpoint: "),
    (ModelError, 2, ""),  # the records are served again after a restart
    (SnapshotError, 3, "model snapshot: "),
    (OutputError, 1, None),  # nothing was committed past the failure
)
CLIENT_ERROR_STATUS = 1


def exit_status(exc: BaseException) -> tuple[int, str | None]:
    """(exit status, prefix of the stderr line) of an error that ends the run: one of
    `EXIT_STATUSES`, or a Kafka client error's (status 1, said by the client's `explain`)."""
    for cls, status, prefix in EXIT_STATUSES:
        if isinstance(exc, cls):
            return status, prefix
    return CLIENT_ERROR_STATUS, None
