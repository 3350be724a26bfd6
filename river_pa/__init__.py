"""Passive-Aggressive and parameter-free online learners as River estimators."""
