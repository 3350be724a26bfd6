"""The models a daemon serves: the model slot (model, pristine copy, metadata, label check,
snapshot name and manifest) and its publishing to the model topic."""
