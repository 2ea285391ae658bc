"""A study's registration file: its schema's errors, the studies' files, a study outside the
project with its file beside it, and `harness claims show` reading it."""

from __future__ import annotations

import json
import math
from argparse import Namespace
from pathlib import Path

import pytest

from harness.studies.registry import discover, get_study
from harness.verdicts.claims import PAPER, TARGET
from harness.verdicts.registration import Registration
from harness.verdicts.registration_file import RegistrationError, load
from harness.verdicts.validity import CHECKS

ROOT = Path(__file__).resolve().parents[2]

GOOD = '''\
study = "s9"

[[claims]]
id = "s9.gain"
source = "paper"
claim = "TIPC over TCP"
paper = "+10%"
unit = "%"
quote = "the sentence"
seed_line = "003:208"
quantity = "a ratio per repetition"
regime = "1:48 fan-in"
checks = ["wire-rate"]
[claims.region]
low = 9.5
high = 10.5
rule = "stated to 1 %"

[[claims]]
id = "s9.ours"
source = "target"
claim = "fast"
paper = "-"
[claims.region]
high = 1.0
rule = "our target"

[design]
repetitions.quick = 2
repetitions.verdict = 10
order = "shuffled per repetition"

[[changes]]
date = "2026-11-26"
what = "verdict 5 -> 10"
why = "too wide"
claims = ["s9.gain"]
'''


def write(tmp_path: Path, text: str, name: str = "s9_registration.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(RegistrationError) as caught:
        load(write(tmp_path, text))
    message = str(caught.value)
    assert str(tmp_path / "s9_registration.toml") in message, message  # names the file
    assert "how to fix:" in message, message
    return message


def test_a_file_reads_as_the_registration_it_states(tmp_path):
    reg = load(write(tmp_path, GOOD))
    assert isinstance(reg, Registration) and reg.study == "s9"
    gain, ours = reg.claims
    assert (gain.id, gain.source, gain.unit, gain.checks) == ("s9.gain", PAPER, "%", ("wire-rate",))
    assert (gain.region.low, gain.region.high, gain.region.why) == (9.5, 10.5, "stated to 1 %")
    assert ours.source == TARGET and ours.region.low == -math.inf and ours.region.high == 1.0
    assert ours.quote == "" and ours.checks == ()
    assert reg.design == {"repetitions": {"quick": 2, "verdict": 10},
                          "order": "shuffled per repetition"}
    assert reg.changes[0].claims == ("s9.gain",) and reg.changes[0].why == "too wide"
    assert reg.claim("s9.ours") is ours
    with pytest.raises(KeyError, match="s9 registers no claim 's9.none'.*s9.gain, s9.ours"):
        reg.claim("s9.none")


def test_an_edited_file_is_read_again(tmp_path):
    path = write(tmp_path, GOOD)
    before = load(path).digest
    path.write_text(GOOD.replace("low = 9.5", "low = 9.0"))
    assert load(path).claim("s9.gain").region.low == 9.0 and load(path).digest != before


def test_an_unknown_key_names_the_claim_and_the_field(tmp_path):
    message = error(tmp_path, GOOD.replace('unit = "%"', 'unit = "%"\nunits = "%"'))
    assert "claim s9.gain: field units: unknown key" in message
    assert "known keys are id, source" in message
    message = error(tmp_path, GOOD.replace("rule = \"our target\"", "rule = \"our target\"\nlo = 1"))
    assert "claim s9.ours: region: field lo: unknown key" in message
    assert "the file: field claim: unknown key" in error(tmp_path, "claim = 1\n" + GOOD)


def test_a_missing_field_names_the_claim_and_the_field(tmp_path):
    message = error(tmp_path, GOOD.replace('paper = "-"\n', ""))
    assert "claim s9.ours: field paper: missing" in message and "add paper = ..." in message
    message = error(tmp_path, GOOD.replace('rule = "our target"\n', ""))
    assert "claim s9.ours: region: field rule: missing" in message
    message = error(tmp_path, GOOD.replace('id = "s9.ours"\n', ""))
    assert "claim #2 (no id): field id: missing" in message
    # a paper's claim must carry its sentence, seed line, quantity and regime
    message = error(tmp_path, GOOD.replace('quote = "the sentence"\n', ""))
    assert "claim s9.gain: field quote: missing" in message and "source target or lab" in message
    assert "file: field design: missing" in error(tmp_path, GOOD[:GOOD.index("[design]")])


def test_a_wrong_type_names_the_claim_the_field_and_the_type(tmp_path):
    message = error(tmp_path, GOOD.replace("low = 9.5", 'low = "9.5"'))
    assert "claim s9.gain: region: field low: must be a number, not a string" in message
    message = error(tmp_path, GOOD.replace('unit = "%"', "unit = 1"))
    assert "claim s9.gain: field unit: must be a string, not an integer (1)" in message
    assert "(in double quotes)" in message
    message = error(tmp_path, GOOD.replace("high = 1.0", "high = true"))
    assert "field high: must be a number, not the boolean true" in message
    message = error(tmp_path, GOOD.replace('checks = ["wire-rate"]', 'checks = "wire-rate"'))
    assert "claim s9.gain: field checks: must be an array, not a string" in message
    message = error(tmp_path, GOOD.replace('source = "target"', 'source = "ours"'))
    assert "claim s9.ours: field source: 'ours' is not a source" in message
    assert "paper, target, lab" in message


def test_a_region_whose_low_is_above_its_high_is_refused(tmp_path):
    message = error(tmp_path, GOOD.replace("low = 9.5\nhigh = 10.5", "low = 10.5\nhigh = 9.5"))
    assert "claim s9.gain: field region: low 10.5 is above high 9.5" in message
    assert "swap them" in message
    message = error(tmp_path, GOOD.replace("high = 1.0\n", ""))
    assert "claim s9.ours: field region: neither low nor high" in message
    message = error(tmp_path, GOOD.replace("high = 1.0", "high = inf"))
    assert "claim s9.ours: field region.high: inf is not a finite number" in message


def test_a_claim_id_given_twice_is_refused(tmp_path):
    message = error(tmp_path, GOOD.replace('id = "s9.ours"', 'id = "s9.gain"'))
    assert "claim s9.gain: field id: the id is given twice" in message


def test_a_validity_check_that_does_not_exist_is_refused(tmp_path):
    message = error(tmp_path, GOOD.replace('["wire-rate"]', '["wire-rate", "wire-speed"]'))
    assert "claim s9.gain: field checks: 'wire-speed' is no validity check" in message
    assert ", ".join(sorted(CHECKS)) in message


def test_a_change_must_be_dated_and_name_registered_claims(tmp_path):
    message = error(tmp_path, GOOD.replace('date = "2026-11-26"', 'date = "26.11.2026"'))
    assert "change #1 (26.11.2026): field date: '26.11.2026' is not an ISO date" in message
    message = error(tmp_path, GOOD.replace('claims = ["s9.gain"]', 'claims = ["s9.lost"]'))
    assert "change #1 (2026-11-26): field claims: 's9.lost' is no claim" in message
    message = error(tmp_path, GOOD.replace('why = "too wide"\n', ""))
    assert "change #1 (2026-11-26): field why: missing" in message


def test_a_change_that_renames_claims_lets_earlier_changes_keep_the_old_ids(tmp_path):
    """A renamed claim: the earlier change still names the id it touched then, the renaming
    change maps old to new, and the digest of a registration without a rename is unchanged."""
    plain = load(write(tmp_path, GOOD))
    renamed = GOOD.replace('id = "s9.gain"', 'id = "s9.gain@fast"') + \
        ('\n[[changes]]\ndate = "2026-11-29T00:45Z"\nwhat = "renamed"\nwhy = "the limit moved"\n'
         'claims = ["s9.gain@fast"]\nrenamed = { "s9.gain" = "s9.gain@fast" }\n')
    reg = load(write(tmp_path, renamed))
    assert reg.changes[0].claims == ("s9.gain",)  # as it was written then
    assert reg.changes[1].renamed == {"s9.gain": "s9.gain@fast"}
    assert reg.body()["changes"][1]["renamed"] == {"s9.gain": "s9.gain@fast"}
    assert "renamed" not in plain.body()["changes"][0]  # other studies' digests unchanged
    message = error(tmp_path, renamed.replace('{ "s9.gain" = "s9.gain@fast" }',
                                              '{ "s9.gain" = "s9.nothing" }'))
    assert "field renamed: s9.gain = 's9.nothing' is not a former id" in message
    # without the rename the old id is no claim of the file
    message = error(tmp_path, renamed.replace('renamed = { "s9.gain" = "s9.gain@fast" }\n', ""))
    assert "field claims: 's9.gain' is no claim" in message


def test_bad_toml_names_the_file_and_the_line(tmp_path):
    message = error(tmp_path, GOOD.replace('paper = "+10%"', 'paper = +10%'))
    assert "not valid TOML" in message and "line 7" in message


def test_every_study_reads_its_registration_from_its_file():
    """No study declares its claims in Python any more: each names a file beside its module
    (in the study's package, harness/studies/NAME/), and the registration it archives is that
    file's."""
    from harness.studies import base

    for name in ("s0", "s1", "s2", "s3", "s4"):
        study = get_study(name)
        path = study.registration_path()
        assert path is not None and path.name == "registration.toml" and path.is_file()
        assert path.parent == Path(base.__file__).parent / name
        assert study.registration().to_dict() == load(path).to_dict()
        assert path in study.code_files()  # digested with the study's code
        module = __import__(type(study).__module__, fromlist=["_"])
        assert not hasattr(module, "CLAIMS") and not hasattr(module, "DESIGN")
    discover()
    modules = sorted((ROOT / "harness" / "studies").glob("s[0-9]*/*.py"))
    assert len(modules) > 20, modules  # every module of every study package
    for info in modules:
        text = info.read_text()
        for name in ("CLAIMS", "DESIGN", "CHANGES"):
            assert f"\n{name} = " not in text and f"\n{name}: " not in text, (info.name, name)


def test_the_registration_files_are_package_data():
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["harness.studies"]
    studies = ROOT / "harness" / "studies"
    files = sorted(studies.glob("s[0-9]*/registration.toml"))
    assert len(files) == 5, files
    packaged = {found for pattern in patterns for found in studies.glob(pattern)}  # as setuptools globs
    for path in files:  # each study's file, in its package
        assert path in packaged, (path, patterns)


STUDY = '''\
from pathlib import Path

from harness.verdicts.claims import table, judge
from harness.verdicts.intervals import mean_estimate
from harness.studies import Citation, Parameters, Study, param
from dataclasses import dataclass


@dataclass(frozen=True)
class OutParams(Parameters):
    count: int = param(3, "samples", low=1, high=10)


class OutStudy(Study):
    name = "outside-demo"
    title = "a study kept in a folder of its own"
    citation = Citation("us", "an example", "nowhere", 2026)
    Params = OutParams
    registration_file = "outside_registration.toml"

    def topology(self, params):
        raise NotImplementedError

    def requirements(self, params):
        raise NotImplementedError

    def measure(self, session, bed, params, configured):
        raise NotImplementedError

    def claims(self, data):
        return table([judge(self.registration().claim("s9.ours"),
                            mean_estimate(data.results.x, ""))])

    def figures(self, data):
        return {}
'''


def test_a_study_outside_the_project_reads_the_file_beside_it(tmp_path, capsys, monkeypatch):
    """A study found through HARNESS_STUDY_PATH (a folder of its own) names its file as the
    project's studies do; `harness claims show` prints what that file says, and an edit of
    the file is what it prints next."""
    from harness.commands.claims import cmd_claims_show
    from harness.studies import base, registry

    folder = tmp_path / "mystudies"
    folder.mkdir()
    (folder / "outside_study.py").write_text(STUDY)
    registration = write(folder, GOOD.replace('study = "s9"', 'study = "outside-demo"'),
                         "outside_registration.toml")
    monkeypatch.setenv(registry.PATH_VARIABLE, str(folder))
    monkeypatch.setattr(registry, "_discovered", False)  # look through the path again
    monkeypatch.setattr(base, "DEFINED", dict(base.DEFINED))  # and forget it after
    study = get_study("outside-demo")
    assert study.registration_path() == registration
    assert [c.id for c in study.registration().claims] == ["s9.gain", "s9.ours"]
    assert registration in study.code_files()
    assert cmd_claims_show(Namespace(study="outside-demo", json=False)) == 0
    out = capsys.readouterr().out
    assert "[paper] s9.gain: TIPC over TCP" in out and "region: 9.5..10.5% -- stated to 1 %" in out
    assert "checks: wire-rate" in out and "changed 2026-11-26: verdict 5 -> 10" in out
    registration.write_text(registration.read_text().replace("high = 10.5", "high = 11.5"))
    assert cmd_claims_show(Namespace(study="outside-demo", json=True)) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["claims"][0]["region"]["high"] == 11.5
    assert shown["digest"] == study.registration().digest
    # a file that names another study is refused, naming both
    registration.write_text(GOOD)
    with pytest.raises(RegistrationError, match="field study: 's9', but the study that names "
                                                "this file is 'outside-demo'"):
        study.registration()
    registration.unlink()
    with pytest.raises(RegistrationError, match="registration file cannot be read"):
        study.registration()


def test_a_claims_validity_checks_are_archived_and_digested():
    """Issue 33 item 1: the checks a claim's points must pass are part of what is registered."""
    from harness.studies.registry import discover, get_study

    discover()
    reg = get_study("s4").registration()
    claim = next(c for c in reg.claims if c.checks)
    assert claim.registration()["checks"] == list(claim.checks)
    without = type(reg)(reg.study, tuple(c if c is not claim else type(c)(**{**c.__dict__, "checks": ()})
                                         for c in reg.claims), reg.design, reg.changes)
    assert without.digest != reg.digest


READING_CLAIM = '''
[[claims]]
id = "s9.unshaped"
source = "reading"
claim = "relays limiting, unshaped"
paper = "-"
unit = "x"
quantity = "iperf3 ratio per repetition"
regime = "NOT the paper's regime: unshaped host"
'''


def test_a_reading_has_no_region_and_says_what_it_measures_and_where(tmp_path):
    """source = "reading": a figure shown outside the paper's regime, judged against nothing."""
    text = GOOD.replace("[design]", READING_CLAIM + "\n[design]")
    reading = load(write(tmp_path, text)).claim("s9.unshaped")
    assert reading.source == "reading" and reading.region.unbounded
    assert reading.registration()["region"] == {
        "low": None, "high": None, "text": "-",
        "rule": "none: a reading is shown with its interval and judged against nothing"}
    message = error(tmp_path, text.replace('regime = "NOT', 'region = { high = 1.0, rule = "r" }\nregime = "NOT'))
    assert "claim s9.unshaped: field region: a reading is judged against nothing" in message
    message = error(tmp_path, text.replace('regime = "NOT the paper\'s regime: unshaped host"\n', ""))
    assert "claim s9.unshaped: field regime: missing (a reading needs" in message
    # every other claim still needs its region, and the error names the reading as the way out
    message = error(tmp_path, GOOD.replace('[claims.region]\nhigh = 1.0\nrule = "our target"\n', ""))
    assert "claim s9.ours: field region: missing" in message and 'source = "reading"' in message


def test_a_change_says_whether_it_was_made_after_outcomes_were_read_outside_the_digest(tmp_path):
    """Issue 33 reviews (S4, S0 of 2026-11-29): a report flags verdicts decided under a rule
    changed after outcomes were read, from ``after_outcomes``; marking a change changes nothing a
    run was made to test, so the digest (and every reference registered under it) stays."""
    plain = load(write(tmp_path, GOOD))
    assert plain.changes[0].after_outcomes is None  # not stated
    for mark, value in (("true", True), ("false", False)):
        marked = load(write(tmp_path, GOOD + f"after_outcomes = {mark}\n"))
        assert marked.changes[0].after_outcomes is value
        assert marked.digest == plain.digest and marked.body() == plain.body()
        assert "after_outcomes" not in json.dumps(marked.to_dict())
    for bad, kind in (('"yes"', "a string"), ("1", "an integer (1)")):
        message = error(tmp_path, GOOD + f"after_outcomes = {bad}\n")
        assert (f"change #1 (2026-11-26): field after_outcomes: must be a boolean (true or false), "
                f"not {kind}") in message
        assert "unquoted: true where the change's reason says it was made after outcomes" in message
    message = error(tmp_path, GOOD.replace('why = "too wide"', "why = true"))  # a boolean elsewhere
    assert "field why: must be a string, not the boolean true" in message


#: what a change's reason says that its ``after_outcomes`` must agree with (the studies' files)
SAYS_AFTER = ("made after", "made after the outcomes were read", "made after those outcomes were read",
              "made after the runs' outcomes were read", "had been read")
SAYS_BEFORE = ("made before any run of the pooled reference started", "registered before any data of it",
               "registered before any run measured it")


@pytest.mark.parametrize("name", ["s0", "s1", "s2", "s3", "s4"])
def test_each_studys_changes_are_marked_as_their_reasons_say(name):
    """A change whose reason says it was made after outcomes (or references) were read is marked
    ``after_outcomes = true``; one that says it was made before any data of it is not; and the
    studies' files mark what they say (backfilled 2026-11-29 from each change's prose)."""
    discover()
    registration = get_study(name).registration()
    for number, change in enumerate(registration.changes, 1):
        prose = " ".join(f"{change.what} {change.why}".lower().split())
        label = f"{name} change #{number} ({change.date})"
        if any(p in prose for p in SAYS_AFTER):
            assert change.after_outcomes is True, f"{label} says it was made after outcomes were read"
        elif any(p in prose for p in SAYS_BEFORE):
            assert change.after_outcomes is False, f"{label} says it was made before any data of it"
    assert any(c.after_outcomes is True for c in registration.changes)


def test_claims_show_says_when_each_change_was_made(capsys):
    from harness.commands.claims import cmd_claims_show

    discover()
    assert cmd_claims_show(Namespace(study="s4", json=False)) == 0
    out = capsys.readouterr().out
    assert "changed 2026-11-29T08:27Z [made after outcomes were read]: (1) A peak is held" in out
    assert "changed 2026-11-29T03:33Z [made before any data of it]: The verdict profile" in out
    assert "changed 2026-11-26: Peaks judged at 10 streams" in out  # its reason does not say
