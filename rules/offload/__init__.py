"""CPU-offloading rules."""
