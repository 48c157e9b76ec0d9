"""MoE dispatch, HybridEP and expert-parallel overlap rules."""
