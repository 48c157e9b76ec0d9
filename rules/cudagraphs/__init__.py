"""CUDA graph rules."""
