"""benchmarks/relay_profile.py's parsing and summary: the variants, perf's counts, the ratios
paired per run."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "relay_profile", Path(__file__).resolve().parents[3] / "benchmarks" / "relay_profile.py")
profile = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("relay_profile", profile)  # its dataclasses look their module up
_SPEC.loader.exec_module(profile)


def test_a_variant_names_its_kind_and_srd_options(tmp_path):
    src = tmp_path / "srd.c"
    src.write_text("int main(void) { return 0; }\n")
    assert profile.parse_variant("srd0=srd:lowat=0") == profile.Variant("srd0", "srd", lowat=0)
    assert profile.parse_variant(f"big=srd:pipe=65536:src={src}") == profile.Variant(
        "big", "srd", pipe=65536, src=str(src))
    assert profile.parse_variant("go=gosplice") == profile.Variant("go", "gosplice")


@pytest.mark.parametrize("text, fragment", [
    ("srd", "NAME=KIND"),                      # no name
    ("srd2=srd", "not ending in 2"),           # NAME2 is the two-relay path
    ("x=squid", "kind 'squid'"),
    ("x=gosplice:lowat=0", "peers take no options"),
    ("x=srd:lowat=128k", "number of bytes"),
    ("x=srd:color=red", "srd takes lowat="),
    ("x=srd:src=/no/such/srd.c", "no file /no/such/srd.c"),
])
def test_a_bad_variant_is_refused_with_what_to_write(text, fragment):
    with pytest.raises(SystemExit, match=fragment.replace("(", r"\(")):
        profile.parse_variant(text)


def test_perf_counts_keep_counted_events_only():
    text = ("Performance counter stats\n"
            "123456,,raw_syscalls:sys_enter,591544296,100.00,,\n"
            "<not counted>,,syscalls:sys_enter_futex,0,100.00,,\n"
            "17.5,,context-switches,591565045,100.00,,\n")
    assert profile.perf_counts(text) == {"raw_syscalls:sys_enter": 123456.0,
                                         "context-switches": 17.5}


def test_ratios_are_paired_per_run_against_the_reference_with_as_many_relays():
    def t(path, run, gbps):
        return profile.Test(path, run, throughput_gbps=gbps, relay_cpu_s_per_gb=1.0)

    tests = [t("srd", 1, 2.0), t("srd0", 1, 3.0), t("srd", 2, 2.0), t("srd0", 2, 2.2),
             t("srd0", 3, 9.0),  # run 3 has no reference: no pair
             t("srd2", 1, 1.0), t("srd02", 1, 2.0)]
    summary = profile.summarize(tests, "srd")
    assert "x_srd" not in summary["srd"] and "x_srd2" not in summary["srd2"]
    got = summary["srd0"]["x_srd"]["throughput_gbps"]
    assert got["per_run"] == [1.5, 1.1] and got["n"] == 2
    assert got["value"] == pytest.approx(math.sqrt(1.5 * 1.1))
    assert got["low"] < got["value"] < got["high"]
    assert summary["srd02"]["x_srd2"]["throughput_gbps"]["value"] == pytest.approx(2.0)
    assert summary["srd0"]["throughput_gbps"] == {"median": 3.0, "min": 2.2, "max": 9.0, "n": 3}
