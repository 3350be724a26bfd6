"""Uniclass Passive-Aggressive anomaly detection (Crammer et al. 2006, Section 6)."""

from river_pa.anomaly.uniclass import PAUniclass

__all__ = ["PAUniclass"]
