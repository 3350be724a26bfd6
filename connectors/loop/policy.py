"""What a role does, declared once per role: the loop asks its daemon's `policy`, never the
role's name (`--role both` is the default policy; roles/ declares the predictor's and the
learner's)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Policy"]


@dataclass(frozen=True)
class Policy:
    emits: bool = True  # sends a prediction record for every event
    learns: bool = True  # reads the labels topic, learns, keeps events waiting for labels
    keeps_state: bool = True  # writes checkpoints (file, state topic); else commits offsets only
    publishes: bool = False  # sends the model and its progress to the model topic
    # assigns itself every partition: one event-time order over all of them, resumes from its
    # own state always, and refuses to start empty where the group has committed offsets
    whole_stream: bool = False
    local_checkpoint_wins: bool = True  # over the state topic's copy (else the topic's wins)
