"""Reproducible re-runs of classic cluster/grid communication studies.

The harness builds labs (network namespaces, VMs) or reaches real machines over
SSH, configures them with recorded and reversible operations, runs benchmark
notebooks through papermill and archives every run with its provenance.
"""

__version__ = "0.1.0"
