"""Rules the launch-script reader reports: launch lines the runner rejects, or that mblint
could not check."""
