"""Parameter-free online learners: RescaledExp (Cutkosky and Boahen 2017) and the
scale-invariant learners (Kotlowski 2017)."""

from river_pa.paramfree.rescaledexp import RescaledExp, RescaledExpClassifier, RescaledExpRegressor
from river_pa.paramfree.scale_invariant import (
    CoordinateScaleInvariantClassifier,
    CoordinateScaleInvariantRegressor,
    FullScaleInvariantClassifier,
    FullScaleInvariantRegressor,
)

__all__ = [
    "CoordinateScaleInvariantClassifier",
    "CoordinateScaleInvariantRegressor",
    "FullScaleInvariantClassifier",
    "FullScaleInvariantRegressor",
    "RescaledExp",
    "RescaledExpClassifier",
    "RescaledExpRegressor",
]
