"""Coverage rules: where mblint's analysis of a job stopped, so that a pass means checked."""
