"""A run: a session on a testbed, a notebook executed and archived, one per machine, and sweeps of runs."""
