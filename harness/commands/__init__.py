"""The harness command's subcommands for claims, the archive's runs and Slurm (harness/cli.py is the entry)."""
