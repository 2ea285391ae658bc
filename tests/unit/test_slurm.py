"""Slurm without a cluster: sbatch options and scripts, scontrol's job lines, the allocation
onto a study's roles, and a sweep's status from submissions, Slurm's states and the archive.
(tests/integration/slurm runs all of it against a real Slurm.)"""

from __future__ import annotations

import argparse
import subprocess

import pytest

from harness.commands.slurm import check_flags, joined_option_values
from harness.errors import SpecError
from harness.run.execute import parse_value
from harness.slurm.allocation import AllocatedHost, build, check_template, roles
from harness.slurm.jobs import TaskState, parse_show_job
from harness.slurm.sbatch import JobScript, SbatchOptions, point_arguments
from harness.topology.topology import TopologyBuilder


@pytest.mark.parametrize("text, own", [
    ("--nodes=3", "--nodes"), ("-N 2", "--nodes"), ("-N2", "--nodes"),
    ("--array=0-3", "--array"), ("-o /tmp/x", "--output"), ("--wrap 'hostname'", "--wrap"),
    ("--partition=p --chdir=/tmp", "--chdir"), ("--test-only", "--test-only"),
])
def test_options_the_harness_sets_itself_are_refused(text, own):
    with pytest.raises(SpecError, match=f"--slurm sets {own}, which the harness sets itself"):
        SbatchOptions.parse(text)


@pytest.mark.parametrize("text, own, written", [
    ("--outp=/x", "--output", "as --outp, an abbreviation of --output"),
    ("--arr=0-99", "--array", "as --arr, an abbreviation of --array"),
    ("--nod=1", "--nodes", "as --nod, an abbreviation of --nodes"),
    ("--chd=/", "--chdir", "as --chd, an abbreviation of --chdir"),
    ("--wra=id", "--wrap", "as --wra, an abbreviation of --wrap"),
    ("--partition=p --test", "--test-only", "as --test, an abbreviation of --test-only"),
    ("--pars", "--parsable", "as --pars, an abbreviation of --parsable"),
    ("--n=1", "--nodes or --ntasks", "as --n, an abbreviation of --nodes or --ntasks"),
    ("-vN2", "--nodes", "as -N inside -vN2: sbatch reads a cluster of short options"),
    ("-QHo /x", "--output", "as -o inside -QHo"),
])
def test_abbreviations_of_the_harness_options_are_refused_naming_both(text, own, written):
    """sbatch (getopt_long) takes any unambiguous beginning of a long option's name, and a
    cluster of short options, for the options: these passed the refusal by exact name."""
    with pytest.raises(SpecError, match=f"--slurm sets {own} \\({written}.*which the harness "
                                        "sets itself"):
        SbatchOptions.parse(text)


@pytest.mark.parametrize("text", ["--wait-all-nodes=1", "--ntasks-per-node=2", "--open-mode=append",
                                  "-pbigNodes", "-J jobN", "--partition=nodes", "-kv"])
def test_options_that_only_look_like_the_harness_options_pass(text):
    assert SbatchOptions.parse(text).args


def test_slurms_vocabulary_passes_through_as_sbatch_lines():
    opts = SbatchOptions.parse("--partition debug -A proj --time=30 --qos=low "
                               "--constraint 'ib&haswell' --comment 'two words'")
    assert opts.lines() == ["#SBATCH --partition=debug", "#SBATCH -A proj", "#SBATCH --time=30",
                            "#SBATCH --qos=low", "#SBATCH --constraint=ib&haswell",
                            '#SBATCH --comment="two words"']
    with pytest.raises(SpecError, match="cannot be split"):
        SbatchOptions.parse("--comment 'open")


def script(tasks, **kw) -> JobScript:
    from pathlib import Path

    return JobScript(name="harness-ping-demo", notebook=Path("/nb/ping study.ipynb"), nodes=2,
                     options=SbatchOptions.parse("--time=10"), tasks=tasks,
                     data=Path("/shared/data"), template="ssh: {user: root}\n",
                     python="/venv/bin/python", **kw)


def test_an_array_script_runs_task_i_on_point_i_and_execs_the_harness(tmp_path):
    points = [{"rate_mbit": 50, "name": "a b; rm -rf /"}, {"rate_mbit": 100.5, "flag": True}]
    text = script(tuple(point_arguments(p) for p in points), share_machine=True).text()
    assert "#SBATCH --nodes=2\n#SBATCH --exclusive\n" in text
    assert "#SBATCH --array=0-1" in text and "#SBATCH --output=/shared/data/slurm/logs/%A_%a.out" \
        in text
    assert "export HARNESS_SHARE_MACHINE=1" in text
    assert "exec /venv/bin/python -m harness run '/nb/ping study.ipynb' --inventory slurm " \
        "--inventory-template - -q \"$@\" <<'HARNESS_INVENTORY_TEMPLATE'" in text
    path = tmp_path / "job.sh"
    path.write_text(text)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    # what each task would pass to `harness run`, read back as `-p` values are
    for task, point in enumerate(points):
        probe = text.replace("exec /venv/bin/python", "printf '%s\\n' /venv/bin/python")
        out = subprocess.run(["bash", "-c", probe, "job.sh"], capture_output=True, text=True,
                             env={"SLURM_ARRAY_TASK_ID": str(task), "PATH": "/usr/bin:/bin"})
        words = out.stdout.splitlines()
        pairs = words[words.index("-q") + 1:]
        got = {pairs[i + 1]: parse_value(pairs[i + 2]) for i in range(0, len(pairs), 3)}
        assert got == point
    out = subprocess.run(["bash", "-c", text, "job.sh"], capture_output=True, text=True,
                         env={"SLURM_ARRAY_TASK_ID": "7", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and "no point for array task 7" in out.stderr


def test_one_point_is_a_plain_job_with_its_log_by_job_id():
    text = script((point_arguments({"count": 3}),)).text()
    assert "--array" not in text and "%j.out" in text and "set -- -p count 3\n" in text


SHOW_JOB = """\
JobId=12 ArrayJobId=12 ArrayTaskId=2-3 JobName=harness-ping-demo JobState=PENDING Reason=Resources ExitCode=0:0 NodeList=(null) StdOut=/d/slurm/logs/%A_%a.out
JobId=13 ArrayJobId=12 ArrayTaskId=1 JobName=harness-ping-demo JobState=RUNNING Reason=None ExitCode=0:0 NodeList=n[1-2] StdOut=/d/slurm/logs/12_1.out
JobId=12 ArrayJobId=12 ArrayTaskId=0 JobName=harness-ping-demo JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 NodeList=n[1-2] StdOut=/d/slurm/logs/12_0.out
"""


def test_scontrol_job_lines_give_one_state_per_array_task():
    states = {s.task: s for s in parse_show_job(SHOW_JOB)}
    assert sorted(states) == [0, 1, 2, 3]
    assert states[2].phase == states[3].phase == "pending" and states[1].phase == "running"
    assert states[0].phase == "ended" and states[0].exit_code == "1:0"
    assert states[3].log == "/d/slurm/logs/12_3.out"  # a pending range's pattern, filled
    assert states[0].describe() == "job 12_0 FAILED, exit 1:0, reason NonZeroExitCode"
    [single] = parse_show_job("JobId=7 JobName=x JobState=COMPLETED ExitCode=0:0 "
                              "StdOut=/l/%j.out\n")
    assert single.task is None and single.phase == "ended" and single.log == "/l/7.out"


def topology():
    return (TopologyBuilder("t").node("client").node("router", forwarding=True).node("server")
            .link(("client", "eth0", "198.18.0.1/24"), ("router", "a", "198.18.0.2/24"))
            .link(("router", "b", "198.18.1.2/24"), ("server", "eth0", "198.18.1.1/24"))
            .build())


HOSTS = [AllocatedHost("c17", "10.0.0.17"), AllocatedHost("c18", "10.0.0.18")]


def test_the_allocation_fills_the_roles_in_topology_order_and_leaves_routers_out():
    template = check_template({"ssh": {"user": "me", "key": "~/.ssh/k"},
                               "interfaces": {"eth0": {"device": "ib0", "address": "{ip}/16"}},
                               "nodes": {"server": {"port": 2200}}}, "t")
    assert roles(topology(), template) == ["client", "server"]
    inv = build(topology(), template, HOSTS)
    assert inv["nodes"]["client"] == {"host": "10.0.0.17", "interfaces": {
        "eth0": {"device": "ib0", "address": "10.0.0.17/16"}}}
    assert inv["nodes"]["server"]["host"] == "10.0.0.18" and inv["nodes"]["server"]["port"] == 2200
    assert inv["ssh"] == {"user": "me", "key": "~/.ssh/k"}
    from harness.machines.inventory import Inventory

    Inventory.from_dict(inv).check_covers(topology())  # the result is an ordinary inventory
    # a router the template lists is a role too, and needs a node of its own
    with_router = {"nodes": {"router": {}}}
    assert roles(topology(), with_router) == ["client", "router", "server"]
    with pytest.raises(SpecError, match="2 node\\(s\\) for 3 roles"):
        build(topology(), with_router, HOSTS)


@pytest.mark.parametrize("template, message", [
    ({"nodes": {"nosuch": {}}}, "does not have"),
])
def test_templates_naming_what_the_study_lacks_are_refused(template, message):
    with pytest.raises(SpecError, match=message):
        build(topology(), template, HOSTS)


@pytest.mark.parametrize("template, message", [
    ({"interfaces": {"eth0": {"device": "ib0", "address": "{addr}/16"}}}, "uses \\{addr\\}"),
    ({"hosts": []}, "unknown keys"),
    (["a"], "must be a mapping"),
])
def test_bad_templates_are_refused_when_read(template, message):
    with pytest.raises(SpecError, match=message):
        check_template(template, "t.yaml")


def args(**kw):
    base = dict(slurm=None, inventory=None, wait=False, inventory_template=None, dry_run=False,
                status=False)
    return argparse.Namespace(**{**base, **kw})


def test_slurm_only_flags_are_refused_without_slurm():
    assert check_flags(args()) is False
    with pytest.raises(SpecError, match="--wait goes with --slurm"):
        check_flags(args(wait=True))
    with pytest.raises(SpecError, match="--inventory-template goes with"):
        check_flags(args(inventory_template="t.yaml"), batch=True)
    with pytest.raises(SpecError, match="give one of them"):
        check_flags(args(slurm="", inventory="slurm"))
    with pytest.raises(SpecError, match="nothing to --wait for"):
        check_flags(args(slurm="", wait=True, dry_run=True))
    assert check_flags(args(status=True), batch=True) is True
    assert check_flags(args(inventory="slurm")) is True


def test_a_slurm_value_that_starts_with_a_dash_reaches_argparse_as_one_value():
    from harness.cli import parser

    argv = joined_option_values(["batch", "s.yaml", "--slurm", "--time=5 -p debug", "--wait"])
    assert argv == ["batch", "s.yaml", "--slurm=--time=5 -p debug", "--wait"]
    parsed = parser().parse_args(argv)
    assert parsed.slurm == "--time=5 -p debug" and parsed.wait


def test_a_sweep_file_carries_its_inventory_template(tmp_path):
    from harness.run.sweep import Sweep

    nb = tmp_path / "n.ipynb"
    nb.write_text("{}")
    f = tmp_path / "s.yaml"
    f.write_text("notebook: n.ipynb\nsweep: {count: [1]}\n"
                 "inventory_template: {interfaces: {eth0: {device: ib0, address: '{ip}/16'}}}\n")
    assert Sweep.load(f).inventory_template["interfaces"]["eth0"]["device"] == "ib0"
    f.write_text("notebook: n.ipynb\ninventory_template: {interfaces: {eth0: '{rank}'}}\n")
    with pytest.raises(SpecError, match="uses \\{rank\\}"):
        Sweep.load(f)


def test_sweep_status_from_submissions_slurm_and_the_archive(data_root, tmp_path, monkeypatch):
    """complete (a complete run, wherever it ran), running and pending (Slurm says so),
    failed (the job ended without a complete run: its incomplete run and log are named),
    not submitted."""
    from harness.archive.archive import COMPLETE, INCOMPLETE, Run
    from harness.slurm import submit as slurm_sweep
    from harness.slurm.submit import Submission, counts, sweep_status
    from harness.studies import study_of_notebook
    from unit.archived import NOTEBOOK

    study = study_of_notebook(NOTEBOOK)
    params = {c: study.parameters(profile="quick", count=c).to_dict() for c in (2, 3, 4, 5, 6)}
    # a job's run: its parameters name the inventory it built in a folder of its node
    done = Run.create("ping-demo", {**params[2], "inventory": "/tmp/harness-slurm-inv-x/i.yaml"},
                      data_root, notebook=str(NOTEBOOK))
    done.update(slurm={"array_job_id": "40", "array_task_id": 0, "job_id": "41"})
    done.finish(COMPLETE)
    failed = Run.create("ping-demo", params[5], data_root, notebook=str(NOTEBOOK))
    failed.update(slurm={"array_job_id": "40", "array_task_id": 3, "job_id": "44"})
    failed.finish(INCOMPLETE, "unknown host key for 198.19.1.12")
    log = data_root / "slurm" / "logs" / "40_3.out"
    log.parent.mkdir(parents=True)
    log.write_text("harness: error: unknown host key for 198.19.1.12\n")
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"notebook: {NOTEBOOK}\nparameters: {{profile: quick}}\n"
                     "sweep: {count: [2, 3, 4, 5, 6]}\n")
    Submission("40", str(sweep), str(NOTEBOOK), [{"profile": "quick", "count": c}
                                                 for c in (2, 3, 4, 5)], "#!/bin/bash\n",
               "2026-11-26T22:00:00+00:00").save()
    monkeypatch.setattr(slurm_sweep, "job_states", lambda job: [
        TaskState("40", 1, "RUNNING"), TaskState("40", 2, "PENDING"),
        TaskState("40", 3, "FAILED", "1:0", "NonZeroExitCode", str(log))])
    statuses = {s.point["count"]: s for s in sweep_status(sweep)}
    assert {c: s.status for c, s in statuses.items()} == {
        2: "complete", 3: "running", 4: "pending", 5: "failed", 6: "not submitted"}
    assert statuses[2].run == str(done.path)
    detail = statuses[5].detail
    assert "job 40_3 FAILED, exit 1:0" in detail and str(failed.path) in detail
    assert "unknown host key" in detail and str(log) in detail
    assert counts(list(statuses.values()))["failed"] == 1
    # once slurmctld forgets the job, the archive still says it failed
    monkeypatch.setattr(slurm_sweep, "job_states", lambda job: [])
    statuses = {s.point["count"]: s.status for s in sweep_status(sweep)}
    assert statuses == {2: "complete", 3: "failed", 4: "failed", 5: "failed",
                        6: "not submitted"}


def test_a_yaml_point_round_trips_through_the_scripts_p_values():
    point = {"streams": "1-10", "rate": 0.5, "on": False, "sizes": [1, 2], "name": "x y"}
    words = point_arguments(point)
    assert {words[i + 1]: parse_value(words[i + 2]) for i in range(0, len(words), 3)} == point


def test_wait_follows_one_job_to_its_end_and_finds_its_run(data_root, monkeypatch):
    import io

    from harness.archive.archive import COMPLETE, Run
    from harness.slurm import submit as slurm_sweep
    from unit.archived import NOTEBOOK

    run = Run.create("ping-demo", {"count": 2}, data_root, notebook=str(NOTEBOOK))
    run.update(slurm={"job_id": "9", "node_list": "n[1-2]"})
    run.finish(COMPLETE)
    states = iter([[TaskState("9", None, "PENDING")], [TaskState("9", None, "RUNNING")],
                   [TaskState("9", None, "RUNNING")], [TaskState("9", None, "COMPLETED")]])
    monkeypatch.setattr(slurm_sweep, "job_states", lambda job: next(states))
    out = io.StringIO()
    state, found = slurm_sweep.follow_job("9", interval=0, stream=out)
    assert state.state == "COMPLETED" and found.path == run.path
    assert out.getvalue().splitlines() == ["job 9: PENDING", "job 9: RUNNING", "job 9: COMPLETED"]


def test_points_and_template_are_checked_against_the_study_before_submission(data_root):
    from harness.slurm.submit import submit_points
    from unit.archived import NOTEBOOK

    no_interfaces = ({"ssh": {"user": "root"}}, "ssh: {user: root}\n")
    with pytest.raises(SpecError, match="lacks interface 'eth0'"):
        submit_points(NOTEBOOK, NOTEBOOK, [{"count": 2}], "", no_interfaces, False, False)
    template = {"interfaces": {"eth0": {"device": "eth0", "address": "{ip}/24"}}}
    with pytest.raises(SpecError, match="out of range|count"):
        submit_points(NOTEBOOK, NOTEBOOK, [{"count": 0}], "", (template, ""), False, False)
    job, text = submit_points(NOTEBOOK, NOTEBOOK, [{"count": 2}], "--time=5", (template, "t\n"),
                              False, dry_run=True)
    assert job is None and "#SBATCH --nodes=2" in text and "#SBATCH --time=5" in text
    assert not (data_root / "slurm").exists()  # a dry run records nothing


def test_an_allocations_inventory_is_kept_under_its_jobs_name_never_overwritten(tmp_path):
    from harness.slurm.allocation import job_inventory_name, write_inventory

    assert job_inventory_name({"SLURM_JOB_ID": "8", "SLURM_ARRAY_JOB_ID": "7",
                               "SLURM_ARRAY_TASK_ID": "1"}) == "7_1"
    assert job_inventory_name({"SLURM_JOB_ID": "8"}) == "8"
    first = write_inventory({"nodes": {"a": {"host": "h1"}}}, tmp_path, "8")
    second = write_inventory({"nodes": {"a": {"host": "h2"}}}, tmp_path, "8")
    assert (first.name, second.name) == ("8.yaml", "8-2.yaml")
    assert "h1" in first.read_text() and "h2" in second.read_text()


def test_the_reports_provenance_shows_the_runs_slurm_job():
    from dataclasses import replace

    from harness.archive.report_sections import provenance_section
    from harness.archive.report_slurm import slurm_rows

    text = replace(script((point_arguments({"count": 3}), point_arguments({"count": 4}))),
                   options=SbatchOptions.parse("--partition=debug --time=30 "
                                               "--comment='two words'")).text()
    meta = {"slurm": {"job_id": "13", "array_job_id": "12", "array_task_id": 1,
                      "node_list": "n[1-2]", "partition": "debug", "cluster": "c1",
                      "roles": {"a": "n1", "b": "n2"}, "script": text}}
    rows = slurm_rows(meta)
    assert rows["job"] == "12_1 (job id 13)" and rows["array"] == "job 12, task 1"
    assert rows["node list"] == "n[1-2]" and rows["roles (allocation order)"] == "a on n1, b on n2"
    assert rows["sbatch options given (--slurm)"] == \
        "--partition=debug --time=30 '--comment=\"two words\"'"
    assert "--nodes=2 --exclusive" in rows["sbatch options set by the harness"]
    assert rows["job log"] == "/shared/data/slurm/logs/12_1.out"
    assert "slurm/submissions/12.json" in rows["sbatch script"]
    html = provenance_section(meta, "")
    assert "<h3>Slurm job</h3>" in html and "12_1 (job id 13)" in html
    # an salloc run has no script; a run outside Slurm has no Slurm section at all
    assert "salloc" in slurm_rows({"slurm": {"job_id": "7"}})["sbatch script"]
    assert "Slurm job" not in provenance_section({}, "")


def test_a_kernel_killed_with_the_job_leaves_no_traceback_but_other_errors_do():
    import asyncio
    import logging

    import zmq
    from nbclient.exceptions import DeadKernelError

    from harness.run.kernel_death import KernelGoneFilter, quiet_kernel_death, quiet_own_death
    from harness.slurm.ending import ending_line

    def record(message, exc):
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, (),
                                 (type(exc), exc, None) if exc else None)

    quiet_kernel_death()
    quiet_kernel_death()  # once is enough: no second filter

    [filt] = [f for f in logging.getLogger("asyncio").filters if isinstance(f, KernelGoneFilter)]
    abandoned = "Task exception was never retrieved\nfuture: <Task finished>"
    assert not filt.filter(record(abandoned, DeadKernelError("Kernel died")))
    assert not filt.filter(record(abandoned, zmq.error.ZMQError(9, "Socket operation on "
                                                                  "non-socket")))
    assert not filt.filter(record("Kernel died while waiting for execute reply.", None))
    assert filt.filter(record(abandoned, ValueError("a real bug")))  # still shown
    assert filt.filter(record("Task was destroyed but it is pending!", None))
    assert filt.filter(record("unrelated", asyncio.CancelledError()))
    assert "before a run started: nothing was changed" in ending_line(None)
    # inside the kernel: ipykernel's reply finding the channels closed, and only that
    quiet_own_death()
    [own] = [f for f in logging.getLogger("IPKernelApp").filters
             if isinstance(f, KernelGoneFilter)]
    handler = "Exception in message handler:"
    assert not own.filter(record(handler, zmq.error.ZMQError(88, "Socket operation on "
                                                             "non-socket")))
    assert own.filter(record(handler, KeyError("msg_id")))
