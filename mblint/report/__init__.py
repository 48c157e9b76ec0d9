"""Reporters only format; they decide nothing."""
