"""Passive-Aggressive and parameter-free online learners as River estimators.

Learners take dict features (any hashable keys, real values) and keep their state in numpy
arrays, with Numba kernels for the inner loops.

"""

from river_pa.pa import PAClassifier, PARegressor
from river_pa.rescaledexp import RescaledExp, RescaledExpClassifier, RescaledExpRegressor
from river_pa.scale_invariant import (
    CoordinateScaleInvariantClassifier,
    CoordinateScaleInvariantRegressor,
    FullScaleInvariantClassifier,
    FullScaleInvariantRegressor,
)

__all__ = [
    "PAClassifier",
    "PARegressor",
    "RescaledExp",
    "RescaledExpClassifier",
    "RescaledExpRegressor",
    "CoordinateScaleInvariantClassifier",
    "CoordinateScaleInvariantRegressor",
    "FullScaleInvariantClassifier",
    "FullScaleInvariantRegressor",
]
__version__ = "0.1.0"
