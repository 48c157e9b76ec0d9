"""mblint: a static linter for Megatron-Bridge training configurations."""

__version__ = "0.1.0"
