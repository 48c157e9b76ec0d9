"""Learning-rate scheduler rules."""
