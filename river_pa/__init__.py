"""Passive-Aggressive and parameter-free online learners as River estimators.

Learners take dict features (any hashable keys, real values) and keep their state in numpy
arrays, with Numba kernels for the inner loops.

"""

from river_pa.pa import PAClassifier, PARegressor

__all__ = ["PAClassifier", "PARegressor"]
__version__ = "0.1.0"
