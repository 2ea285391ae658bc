"""The `harness` command: each subcommand reaches the study contract; bad input exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main, parser

ROOT = Path(__file__).resolve().parents[2]


def test_every_subcommand_is_wired():
    p = parser()
    for argv in (["probe"], ["params", "x.ipynb"], ["run", "x.ipynb", "-p", "a", "1"],
                 ["batch", "s.yaml"], ["lab", "show", "s4"], ["lab", "clean"], ["runs"],
                 ["claims", "pool", "a", "b", "--out", "d"]):
        assert callable(p.parse_args(argv).func)


def test_params_prints_the_studys_parameters(capsys):
    assert main(["params", str(ROOT / "notebooks" / "s0_relay.ipynb")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("s0: NAT + user-space relay")
    sizes = next(line for line in out.splitlines() if line.startswith("sizes "))
    assert "(profile)" in sizes and "B" in sizes


def test_lab_show_takes_parameters(capsys):
    assert main(["lab", "show", "s4", "-p", "path_rate_mbit", "123"]) == 0
    assert "123" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["lab", "show", "s9"], "unknown study 's9'"),
    (["lab", "show", "s4", "-p", "streams", "0"], "out of range"),
    (["params", "/no/such.ipynb"], "does not exist"),
    (["run", str(ROOT / "notebooks" / "s4_mptcp.ipynb"), "-p", "nope", "1"], "unknown parameter"),
])
def test_bad_input_is_one_error_and_exit_status_2(argv, message, capsys, data_root):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error:") and message in err
    assert not (data_root / "runs").exists()


def test_runs_lists_nothing_in_an_empty_archive(capsys, data_root):
    assert main(["runs"]) == 0
    assert capsys.readouterr().out == ""
