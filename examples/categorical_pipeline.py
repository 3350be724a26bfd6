"""Two models for a stream with categorical features, for `river-pa serve --model` and
`river-pa evaluate --model` (docs/serving/pipelines.md):

- `model`: a River pipeline, the numeric columns scaled and the categorical ones one-hot
  encoded in front of `PAClassifier` (`--model examples.categorical_pipeline:model`);
- `native`: the same learner taking the strings itself (`categorical=True`: a string value is
  the one-hot feature (name, value) of value 1), the numeric columns scaled in front
  (`--model examples.categorical_pipeline:native`): the same predictions, no encoder.

Their columns are those of `produce_elec2.py --data agrawal`: River's Agrawal generator with
its education level, car make and zip code as strings.
"""

from river import compose, preprocessing

from river_pa import PAClassifier

NUMERIC = ("salary", "commission", "age", "hvalue", "hyears", "loan")
CATEGORICAL = ("elevel", "car", "zipcode")

model = (
    (compose.Select(*NUMERIC) | preprocessing.StandardScaler())
    + (compose.Select(*CATEGORICAL) | preprocessing.OneHotEncoder(drop_zeros=True))
) | PAClassifier()

native = (
    (compose.Select(*NUMERIC) | preprocessing.StandardScaler()) + compose.Select(*CATEGORICAL)
) | PAClassifier(categorical=True)
