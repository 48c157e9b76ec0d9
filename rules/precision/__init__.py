"""Mixed-precision rules."""
