"""Studies: one module each (a :class:`Study` subclass) and a notebook; found, not listed.

See :mod:`harness.studies.base` for the contract and docs/how-to/adding-a-study.md.
"""

from .base import Citation, Requirements, RunData, Study
from .parameters import Parameters, param
from .registry import discover, get_study, study_for, study_of_notebook

__all__ = [
    "Citation",
    "Parameters",
    "Requirements",
    "RunData",
    "Study",
    "discover",
    "get_study",
    "param",
    "study_for",
    "study_of_notebook",
]
