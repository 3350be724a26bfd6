"""Mechanisms every family shares: feature indexing and hashing, value validation, event caches.

Private: the learners compose these; users never need them.

"""
