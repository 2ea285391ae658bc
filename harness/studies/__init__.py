"""One module per study: its topology, parameters, measurement and analysis."""

STUDIES = {
    "s0": "harness.studies.s0",
    "s3": "harness.studies.s3",
    "s4": "harness.studies.s4",
}


def study_module(name: str):
    import importlib

    from ..errors import SpecError

    if name not in STUDIES:
        raise SpecError(f"unknown study {name!r}", f"use one of: {', '.join(sorted(STUDIES))}")
    return importlib.import_module(STUDIES[name])
