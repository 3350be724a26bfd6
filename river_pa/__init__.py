"""Passive-Aggressive and parameter-free online learners as River estimators.

Learners take dict features (any hashable keys, real values) and keep their state in numpy
arrays, with Numba kernels for the inner loops.

"""

from river_pa.cost_sensitive import PACostSensitiveClassifier
from river_pa.kernel_pa import KernelPAClassifier
from river_pa.multiclass import PAMultiClassifier
from river_pa.multilabel import PAMultiLabelClassifier
from river_pa.pa import PAClassifier, PARegressor
from river_pa.rescaledexp import RescaledExp, RescaledExpClassifier, RescaledExpRegressor
from river_pa.scale_invariant import (
    CoordinateScaleInvariantClassifier,
    CoordinateScaleInvariantRegressor,
    FullScaleInvariantClassifier,
    FullScaleInvariantRegressor,
)
from river_pa.sequence import PASequenceTagger
from river_pa.uniclass import PAUniclass

__all__ = [
    "CoordinateScaleInvariantClassifier",
    "CoordinateScaleInvariantRegressor",
    "FullScaleInvariantClassifier",
    "FullScaleInvariantRegressor",
    "KernelPAClassifier",
    "PAClassifier",
    "PACostSensitiveClassifier",
    "PAMultiClassifier",
    "PAMultiLabelClassifier",
    "PARegressor",
    "PASequenceTagger",
    "PAUniclass",
    "RescaledExp",
    "RescaledExpClassifier",
    "RescaledExpRegressor",
]
__version__ = "0.1.0"
