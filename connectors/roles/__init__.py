"""The roles of `river-pa serve --role`: the predictor, the learner and its lease; `both` is the
loop's own default. Each role declares what it does (its `Policy`)."""
