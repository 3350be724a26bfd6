"""Multiclass and cost-sensitive Passive-Aggressive learners (Crammer et al. 2006, Sections 7-8)."""

from river_pa.multiclass.cost_sensitive import PACostSensitiveClassifier
from river_pa.multiclass.pa import PAMultiClassifier

__all__ = ["PACostSensitiveClassifier", "PAMultiClassifier"]
