"""Verdicts: claims registered before data, judged on intervals of physically valid points."""
