"""Cost-sensitive multiclass Passive-Aggressive learner.

Source: K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer (2006), Online
Passive-Aggressive Algorithms, JMLR 7: 551-585. Section 8 (prediction-based and max-loss
updates, margin sqrt(rho(y, r)), the cumulative cost bound of Theorem 10).

"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from river_pa._core.calibration import make_calibrator
from river_pa._core.categorical import check_categorical
from river_pa.multiclass import _numba
from river_pa.multiclass.base import MAX_CLASSES
from river_pa.multiclass.pa import MarginClassifier

__all__ = ["PACostSensitiveClassifier", "zero_one_cost"]

UPDATES = {"prediction-based": _numba.PREDICTION_BASED, "max-loss": _numba.MAX_LOSS}


def zero_one_cost(y, r) -> float:
    """The 0/1 cost: 0.0 when r == y, else 1.0.

    >>> zero_one_cost("a", "a"), zero_one_cost("a", "b")
    (0.0, 1.0)

    """
    return 0.0 if y == r else 1.0


class PACostSensitiveClassifier(MarginClassifier):
    """Cost-sensitive multiclass Passive-Aggressive classifier (PA, PA-I, PA-II).

    Predicting r when the truth is y costs rho(y, r) >= 0 (rho(y, y) = 0). With one prototype
    per label and scores s_r = w_r . x + b_r, the learner enforces the margins
    s_y - s_r >= sqrt(rho(y, r)) one constraint at a time (Crammer et al. 2006, Section 8):

    * "prediction-based": against the predicted label q = argmax_r s_r, with loss
      l = s_q - s_y + sqrt(rho(y, q)) (zero when the prediction is right);
    * "max-loss": against q = argmax_r (s_r - s_y + sqrt(rho(y, r))), with that value as loss.

    The update is w_y += tau x, w_q -= tau x with tau as in `PAMultiClassifier`
    (||Phi(x, y) - Phi(x, q)||^2 = 2 (||x||^2 + 1) with the intercept, 2 ||x||^2 without).
    With the 0/1 cost, "max-loss" is exactly `PAMultiClassifier`.

    For max-loss PA-I with ||Phi(x, y) - Phi(x, q)|| <= 1 and C >= sqrt(max rho), the
    cumulative cost of the predictions is at most ||u||^2 + 2 C sum_t l_ML(u; x_t, y_t) for any
    comparator u (Theorem 10 / Knowl 7; checked in the tests on a real stream).

    Batches: `learn_many`, `predict_many` and `predict_proba_many` take a pandas DataFrame, a
    2-D numpy array or a scipy.sparse matrix (`columns=` names an array's features once; by
    default they are the column numbers; a sparse row holds its stored entries); anything else
    is a TypeError. Targets and weights pair with the rows by position, not by pandas index
    (as in River). `learn_many` equals a `learn_one` loop over the rows.

    Parameters
    ----------
    variant
        "PA", "PA-I" or "PA-II".
    C
        Aggressiveness (> 0); unused by PA.
    update
        "prediction-based" or "max-loss".
    cost
        rho as a nested mapping {y: {r: cost}} (a pair missing from it falls back to the 0/1
        cost) or a callable cost(y, r) -> float; None is the 0/1 cost. For the model to pickle,
        a callable must be defined at module level (not a lambda). Costs must be finite and
        >= 0; rho(y, y) is taken as 0 whatever the cost says. A cost is read once per pair of
        labels, when the second of them is first seen: a bad cost raises ValueError naming the
        pair then, and the model is left unchanged.
    learn_intercept
        Whether each label learns an intercept.
    n_features
        None for a vocabulary of feature keys, a power of two for the hashing trick, at most 2**26
        (`river_pa._core.features.MAX_FEATURES`; more raises ValueError).
    calibration
        None or "temperature", as in `PAMultiClassifier`.
    max_classes
        The most labels the learner will hold (default 1,000): a label past it raises
        `river_pa._core.validation.TooManyClassesError` (a ValueError) and changes nothing.
        Memory grows with the labels (a weight row each, and a labels x labels margin matrix of the costs), so whoever writes the labels
        bounds it through this.
    categorical
        Whether a string value is a one-hot feature, as in `PAMultiClassifier`.

    Notes
    -----
    Predictions, probabilities (softmax of the scores, or softmax(a s) calibrated), sample weights and input validation
    are those of `PAMultiClassifier`.

    Examples
    --------

    Labels are ordered sizes; predicting a size two steps off costs 4, one step off 1:

    >>> import river_pa
    >>> sizes = {"S": 0, "M": 1, "L": 2}
    >>> cost = {y: {r: float((sizes[y] - sizes[r]) ** 2) for r in sizes} for y in sizes}
    >>> model = river_pa.PACostSensitiveClassifier(variant="PA", update="max-loss", cost=cost,
    ...                                            learn_intercept=False)
    >>> for y in ["S", "M", "L"]:
    ...     model.learn_one({"x": 1.0}, y)
    >>> model.learn_one({"x": 1.0}, "S")
    >>> {k: round(v, 3) for k, v in model.decision_function_one({"x": 1.0}).items()}
    {'S': 0.75, 'M': 0.5, 'L': -1.25}

    The last step enforced only the most violated constraint: the far label "L" now sits
    exactly sqrt(4) = 2 below "S", while "M" (which needs 1) is still 0.25 below.

    """

    def __init__(
        self,
        variant: str = "PA-I",
        C: float = 1.0,
        update: str = "max-loss",
        cost: Mapping | Callable | None = None,
        learn_intercept: bool = True,
        n_features: int | None = None,
        calibration: str | None = None,
        max_classes: int = MAX_CLASSES,
        categorical: bool = False,
    ):
        check_categorical(categorical)
        self.categorical = categorical
        self.variant = variant
        self.C = C
        self.calibration = calibration
        self._calibrator = make_calibrator(calibration)
        self.update = update
        self.cost = cost
        self.learn_intercept = learn_intercept
        self.n_features = n_features
        self.max_classes = max_classes
        if update not in UPDATES:
            raise ValueError(f"update must be one of {sorted(UPDATES)}, got {update!r}")
        if not (cost is None or isinstance(cost, Mapping) or callable(cost)):
            raise ValueError(
                f"cost must be None, a mapping {{y: {{r: cost}}}} or a callable, got {cost!r}"
            )
        self._setup(variant, C, learn_intercept, n_features)

    @property
    def _rule(self) -> int:
        return UPDATES[self.update]

    @classmethod
    def _unit_test_params(cls):
        yield {"variant": "PA-I", "C": 0.1, "update": "prediction-based"}
        yield {"variant": "PA-II", "C": 1.0, "update": "max-loss", "cost": zero_one_cost}
        yield {"variant": "PA", "cost": {True: {False: 4.0}, False: {True: 0.25}}}
        yield {"categorical": True, "cost": zero_one_cost}

    def _unit_test_skips(self):
        if self.update == "prediction-based":
            # It updates only when the prediction is wrong: on a tie between the true label and
            # another (all scores start at 0), rounding decides, and feature order changes it.
            return {"check_shuffle_features_no_impact"}
        return set()

    def _pair_margin(self, y, r) -> float:
        """sqrt(rho(y, r)), validated."""
        cost = self.cost
        if cost is None:
            value = zero_one_cost(y, r)
        elif isinstance(cost, Mapping):
            value = cost.get(y, {}).get(r, zero_one_cost(y, r))
        else:
            value = cost(y, r)
        if not isinstance(value, int | float) or not 0 <= value < math.inf:
            raise ValueError(f"cost({y!r}, {r!r}) must be a finite number >= 0, got {value!r}")
        return math.sqrt(value)
