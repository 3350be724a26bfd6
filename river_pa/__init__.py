"""Passive-Aggressive and parameter-free online learners as River estimators.

Learners take dict features (any hashable keys, real values) and keep their state in numpy
arrays, with Numba kernels for the inner loops. Families live in subpackages, as in River:
`linear_model`, `multiclass`, `multilabel`, `anomaly`, `structured`, `kernel`, `paramfree`.
Every learner is also importable from here; a family is imported when one of its learners is
first used, so `import river_pa` stays cheap. `mix` (from `river_pa.mixing`) averages copies
of a learner.

"""

import importlib
import os
import sys


def _run_as_main_safely() -> None:
    """`python -m river_pa...` puts the current folder first on sys.path (before the package
    is imported): a json.py, numpy.py or river.py there was imported instead of the real
    module (the `river-pa` console script does not do that). Drop that entry, and only when a
    river_pa module is the one being run (`python -m mypkg` keeps its own folder)."""
    argv = getattr(sys, "orig_argv", [])
    if "-m" not in argv[1:] or argv.index("-m") + 1 >= len(argv):
        return
    if argv[argv.index("-m") + 1].partition(".")[0] == __name__ and sys.path[:1] == [os.getcwd()]:
        del sys.path[0]


_run_as_main_safely()

_FAMILY = {
    "CoordinateScaleInvariantClassifier": "paramfree",
    "CoordinateScaleInvariantRegressor": "paramfree",
    "FullScaleInvariantClassifier": "paramfree",
    "FullScaleInvariantRegressor": "paramfree",
    "KernelPAClassifier": "kernel",
    "PAClassifier": "linear_model",
    "PACostSensitiveClassifier": "multiclass",
    "PAMultiClassifier": "multiclass",
    "PAMultiLabelClassifier": "multilabel",
    "PARegressor": "linear_model",
    "PASequenceTagger": "structured",
    "PAUniclass": "anomaly",
    "RescaledExp": "paramfree",
    "RescaledExpClassifier": "paramfree",
    "RescaledExpRegressor": "paramfree",
    "mix": "mixing",
}

__all__ = sorted(_FAMILY)
__version__ = "0.1.0"


def __getattr__(name: str):
    family = _FAMILY.get(name)
    if family is None:
        raise AttributeError(f"module 'river_pa' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"river_pa.{family}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
