"""Multilabel Passive-Aggressive learner (Crammer et al. 2006, Section 7, on a classifier chain)."""

from river_pa.multilabel.pa import PAMultiLabelClassifier

__all__ = ["PAMultiLabelClassifier"]
