"""Sequence-length rules."""
