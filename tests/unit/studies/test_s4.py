"""S4's parameters: profiles and refusals."""

import pytest

from harness.errors import SpecError
from harness.studies import s4


def test_s4_profiles_and_overrides():
    quick = s4.Params.resolve()
    paper = s4.Params.resolve(profile="paper")
    assert quick.streams == (1, 2, 4, 10) and paper.streams == tuple(range(1, 11))
    assert paper.repetitions >= 3
    custom = s4.Params.resolve(profile="paper", streams="1,10", repetitions=None)
    assert custom.streams == (1, 10) and custom.repetitions == paper.repetitions


@pytest.mark.parametrize("given, message", [
    ({"streams": 0}, "out of range"),
    ({"duration_s": -1}, "out of range"),
    ({"sender_cpus": 0.001}, "out of range"),
    ({"gridftp": "yes"}, "true or false"),
    ({"path_rate_mbit": 0}, "out of range"),
    ({"no_such": 1}, "unknown parameter"),
    ({"profile": "fast"}, "unknown profile"),
])
def test_s4_bad_parameters(given, message):
    with pytest.raises(SpecError, match=message):
        s4.Params.resolve(**given)
