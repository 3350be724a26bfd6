"""Multilabel Passive-Aggressive learner (Crammer et al. 2006, Section 7)."""

from river_pa.multilabel.pa import PAMultiLabelClassifier

__all__ = ["PAMultiLabelClassifier"]
