"""Structured prediction: the Passive-Aggressive sequence tagger (Crammer et al. 2006, Section 9)."""

from river_pa.structured.sequence import PASequenceTagger

__all__ = ["PASequenceTagger"]
