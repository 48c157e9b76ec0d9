"""General rules: unknown and deprecated fields, optimizer/scheduler/checkpoint contracts."""
