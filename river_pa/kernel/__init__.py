"""Kernel (Mercer) Passive-Aggressive classification, with an optional support-vector budget."""

from river_pa.kernel.kernel_pa import KernelPAClassifier

__all__ = ["KernelPAClassifier"]
