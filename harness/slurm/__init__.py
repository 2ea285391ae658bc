"""Slurm as the engine: batch scripts of runs and sweeps, submitted, followed, and their jobs' ends."""
