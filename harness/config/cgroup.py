"""A CPU limit for chosen processes, in a cgroup of the harness's own.

cgroup v2 (``cpu.max`` = quota/period) where the unified hierarchy has the
cpu controller, else cgroup v1's cpu hierarchy (``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``). 0.5 CPUs is 50 ms every 100 ms; a limit below 0.01 CPUs keeps the
kernel's smallest quota, 1 ms, over a longer period (0.005 CPUs: 1 ms every 200 ms,
:func:`cfs_period_us`). Processes join at
start (see :meth:`Node.spawn`'s ``cgroup``: both versions take a pid written
to ``cgroup.procs``). cgroups belong to the machine, not to a network
namespace, so the directory is made on the machine under any namespace node.
Under cgroup v2 a child gets a cpu.max only when its parent delegates the cpu
controller (``+cpu`` in ``cgroup.subtree_control``): enabled if needed, as a
change of its own, recorded and disabled again afterwards.
"""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass, field

from ..errors import CapabilityMissing, HarnessError, SpecError
from ..journal import undo_checks, undo_context
from ..journal.handlers import stop_recorded_process
from ..journal.journal import undo_handler
from ..journal.tracked import stop_tracked
from ..journal.undo_left import settle
from ..nodes import Node, Result
from .operation import UNKNOWN, Change, Fact, Operation

PERIOD_US = 100_000
#: the kernel's smallest CFS quota (1 ms) and largest period (1 s): the smallest limit expressible
MIN_QUOTA_US, MAX_PERIOD_US = 1_000, 1_000_000
MIN_CPUS = MIN_QUOTA_US / MAX_PERIOD_US


def cfs_period_us(cpus: float) -> int:
    """The CFS period a limit of ``cpus`` is written with: :data:`PERIOD_US` (100 ms), or where
    that would make the quota smaller than the kernel accepts (1 ms: below 0.01 CPUs) the
    period over which 1 ms is ``cpus`` (0.005 CPUs: 200 ms; 0.0075: 133.3 ms). The sender then
    runs in bursts of 1 ms, as at 0.01 CPUs, with longer waits between them."""
    if cpus * PERIOD_US >= MIN_QUOTA_US:
        return PERIOD_US
    return min(MAX_PERIOD_US, int(round(MIN_QUOTA_US / cpus)))


def cfs_quota_us(cpus: float) -> int:
    """The CFS quota of a limit of ``cpus`` over its period (:func:`cfs_period_us`)."""
    return max(MIN_QUOTA_US, int(round(cpus * cfs_period_us(cpus))))
# One command: the mounts, then for each cgroup2 mount its controllers and subtree_control.
_HIERARCHY = ("cat /proc/self/mounts; for p in $(awk '$3 == \"cgroup2\" {print $2}' "
              "/proc/self/mounts); do echo \"@controllers $p $(cat $p/cgroup.controllers)\"; "
              "echo \"@subtree $p $(cat $p/cgroup.subtree_control)\"; done")


@dataclass(frozen=True)
class Hierarchy:
    root: str  # mount point of the hierarchy holding the cpu controller
    version: int
    subtree: tuple[str, ...] = ()  # v2: controllers the root delegates to its children


def hierarchy_fact(machine: Node) -> Fact:
    def parse(res: Result) -> Hierarchy:
        controllers: dict[str, list[str]] = {}
        subtree: dict[str, list[str]] = {}
        v1 = None
        for line in res.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] in ("@controllers", "@subtree") and len(parts) >= 2:
                (controllers if parts[0] == "@controllers" else subtree)[parts[1]] = parts[2:]
            elif len(parts) >= 4 and parts[2] == "cgroup" and "cpu" in parts[3].split(","):
                v1 = v1 or parts[1]
        for point, names in controllers.items():
            if "cpu" in names:
                return Hierarchy(point, 2, tuple(subtree.get(point, ())))
        if v1:
            return Hierarchy(v1, 1)
        raise CapabilityMissing(f"{machine.name} has no cgroup cpu controller mounted",
                                "mount cgroup v2 (or v1's cpu hierarchy), or run without a CPU "
                                "limit")

    return Fact(machine, _HIERARCHY, parse)


@dataclass
class CpuLimit(Operation):
    """A new cgroup limited to ``cpus`` CPUs on ``node``'s machine; its path is :attr:`path`.

    The path is chosen when the hierarchy is known (:meth:`diff`), with a
    random suffix so that it never is someone else's directory.
    """

    node: Node
    cpus: float
    label: str = "sender"
    path: str = ""
    token: str = field(default_factory=lambda: secrets.token_hex(4))

    def check(self) -> None:
        if not MIN_CPUS <= self.cpus <= 1024:
            raise SpecError(f"CPU limit {self.cpus} is out of range",
                            f"give the number of CPUs the process may use, e.g. 0.5 ({MIN_CPUS:g}..1024)")

    def facts(self) -> dict[str, Fact]:
        return {"hierarchy": hierarchy_fact(self.node.machine)}

    def diff(self, facts: dict) -> list[Change]:
        machine = self.node.machine
        found = facts["hierarchy"]
        if found is UNKNOWN:  # a dry run on a machine not built: assume cgroup v2
            found = Hierarchy("(cgroup2 mount)", 2, ())
        root, version = found.root, found.version
        changes = []
        if version == 2 and "cpu" not in found.subtree:
            control = f"{root}/cgroup.subtree_control"
            changes.append(Change(machine, "cgroup-controller", control,
                                  " ".join(found.subtree), "+cpu",
                                  command=f"echo +cpu > {shlex.quote(control)}",
                                  undo={"root": root, "controller": "cpu"}))
        self.path = f"{root}/harness-{self.label}-{self.token}"
        quota, period = cfs_quota_us(self.cpus), cfs_period_us(self.cpus)
        path = shlex.quote(self.path)
        if version == 2:
            setting = f"cpu.max {quota} {period}"
            write = f"echo '{quota} {period}' > {path}/cpu.max"
        else:
            setting = f"cpu.cfs_quota_us {quota} / cpu.cfs_period_us {period}"
            write = (f"echo {period} > {path}/cpu.cfs_period_us && "
                     f"echo {quota} > {path}/cpu.cfs_quota_us")
        changes.append(Change(machine, f"cgroup-v{version}", self.path, None,
                              f"{setting} ({self.cpus:g} CPUs)",
                              command=f"mkdir {path} && {write}", undo_kind="cgroup",
                              undo={"path": self.path}))
        return changes


#: A cgroup this module makes: ``harness-LABEL-TOKEN`` right under a cgroup hierarchy's mount.
_OWN_CGROUP = re.compile(r"^harness-[A-Za-z0-9_.-]{1,64}\Z")
_CONTROLLER = re.compile(r"^[a-z_]{1,32}\Z")
_CGROUP_ROOT = "/sys/fs/cgroup"


def _cgroup_path(data: dict) -> str:
    """The record's cgroup, if it is one this module makes (see :class:`CpuLimit`)."""
    path = undo_checks.under_roots("cgroup", data.get("path"))
    if not path.startswith(_CGROUP_ROOT + "/") or not _OWN_CGROUP.match(path.rsplit("/", 1)[1]):
        raise undo_checks.refuse("cgroup", f"path is not a harness-* cgroup under {_CGROUP_ROOT}",
                                 path)
    return path


#: How long a cgroup whose processes are still leaving is waited for (a sender stopped by
#: SIGKILL at 0.01 CPUs exits slowly: issue 40 found its folder busy right after the stop).
LEAVE_WAIT = 5.0


@undo_handler("cgroup", gone_with_namespace=False)
def _remove_cgroup(node: Node, data: dict) -> None:
    """Remove the cgroup and see it gone. Its processes were stopped before (undo runs
    newest first) but may still be leaving: its CPU limit is lifted (they leave at full
    speed), and for up to :data:`LEAVE_WAIT` seconds it is tried again, the run's own
    recorded processes still inside stopped by their records; then it is left, saying so."""
    path = _cgroup_path(data)
    p = shlex.quote(path)
    act = (f"[ -d {p} ] || exit 0; [ ! -e {p}/cpu.max ] || echo max > {p}/cpu.max; "
           f"[ ! -e {p}/cpu.cfs_quota_us ] || echo -1 > {p}/cpu.cfs_quota_us; rmdir {p}")
    look = (f"[ ! -d {p} ] || {{ printf 'processes in it: %s\n' \"$(tr '\\n' ' ' < {p}/cgroup.procs)\"; "
            "false; }")
    settle(node, act=act, look=look, what=f"cgroup {path}", wait=LEAVE_WAIT,
           finish=f"rmdir {p} once `cat {p}/cgroup.procs` lists no process",
           between=lambda res: _stop_own_processes(node, res.stdout))


def _stop_own_processes(node: Node, seen: str) -> None:
    """Stop what the run started after the cgroup and may still be in it, each by its record,
    never another process: a recorded process among the pids a look saw in the cgroup
    (``processes in it: 1 2 3``) by its pid, start tick and command; a tracked command (the
    senders) by its stop file, which is there only while it has not been stopped."""
    head, _, listed = seen.partition("processes in it:")
    pids = {int(w) for w in listed.split() if w.isdigit()} if not head.strip() else set()
    if not pids:
        return
    machine = node.machine
    for _where, record in undo_context.newer("process", machine.describe()):
        if record.get("pid") in pids:
            try:
                stop_recorded_process(machine, record)
            except HarnessError:  # refused or unreachable: the cgroup's failure names its pids
                pass
    for _where, record in undo_context.newer("tracked", machine.describe()):
        try:
            stop_tracked(machine, record)
        except HarnessError:
            pass


@undo_handler("cgroup-controller", gone_with_namespace=False)
def _disable_controller(node: Node, data: dict) -> None:
    controller = undo_checks.text("cgroup-controller", "controller", data.get("controller"),
                                  _CONTROLLER)
    root = undo_checks.clean_path("cgroup-controller", data.get("root"), "root")
    if root != _CGROUP_ROOT and not root.startswith(_CGROUP_ROOT + "/"):
        raise undo_checks.refuse("cgroup-controller", f"root is not under {_CGROUP_ROOT}", root)
    control = shlex.quote(root + "/cgroup.subtree_control")
    settle(node, act=f"echo {shlex.quote('-' + controller)} > {control}",
           look=f"! grep -qw {shlex.quote(controller)} {control} || {{ cat {control}; false; }}",
           what=f"the {controller} controller enabled for {root}'s children",
           finish=f"echo -{controller} > {control}", wait=2.0)
