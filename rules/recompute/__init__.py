"""Activation-recompute rules."""
