"""A model for the liveness test: PA-I that sleeps `x["sleep"]` seconds before predicting."""

import time

from river_pa.linear_model import PAClassifier


class SleepyPAClassifier(PAClassifier):
    """`PAClassifier` whose `predict_proba_one` first sleeps `x.get("sleep", 0)` seconds."""

    def predict_proba_one(self, x):
        time.sleep(x.get("sleep", 0))
        return super().predict_proba_one(x)
