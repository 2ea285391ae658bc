"""The archive: run folders, where each came from, their reports, the index and comparisons of runs."""
