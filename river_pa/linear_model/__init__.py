"""Binary and regression Passive-Aggressive learners (Crammer et al. 2006, Sections 3-4)."""

from river_pa.linear_model.pa import PAClassifier, PARegressor

__all__ = ["PAClassifier", "PARegressor"]
