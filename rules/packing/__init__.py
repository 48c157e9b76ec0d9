"""Sequence-packing rules."""
