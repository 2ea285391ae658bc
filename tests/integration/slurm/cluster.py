"""A real Slurm cluster on this one machine, for the tests: munged, slurmctld and N slurmd.

The compute nodes are the inventory tests' machines (tests/integration/machines.py): each
a network namespace with its own hostname, its own /run and its own sshd, joined through a
switch namespace whose management bridge carries the controller's address. slurmctld runs
in the switch namespace on that address (the "login node"), each slurmd in its machine's
network and UTS namespaces; the harness inside a job reaches the allocation's nodes over
SSH only, as on a real cluster. Every Slurm command of a test, and the harness that
submits, run in the switch namespace too (:meth:`Cluster.command`, :meth:`Cluster.harness`).

Why it is built this way (PLATFORM.md "Slurm on one machine", checked again 2026-11-26):

- each slurmd is started with ``nsenter --net=NS --uts=...``, not ``ip netns exec``:
  the latter remounts /sys and slurmd then dies with "No filesystem mounted on
  /sys/fs/cgroup"; ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``
  need no cgroup of their own;
- nothing of the host's Slurm or munge configuration is used or changed: munged runs as
  user munge with its key, socket, pid and seed files in this cluster's temporary folder
  (``--key-file``, ``--socket``); slurm.conf is there too and every Slurm command finds
  it through ``SLURM_CONF`` (and the munge socket through its ``AuthInfo``); nothing is
  created in the host's network namespace;
- every daemon is started in the foreground by us (``-D``/``-F``) and stopped by the pid we
  recorded, checked by its start time; the machines fixture removes its namespaces and
  sshds by identity, and the temporary folder goes by its path.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..machines import MANAGEMENT, Machines, MachineSpec, running_machines
from ..machines import skip_reason as machines_skip_reason

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel",
            "nsenter", "setpriv")


def skip_reason() -> str | None:
    """Why a real Slurm cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root (namespaces, daemons)"
    reason = machines_skip_reason()
    if reason:
        return reason
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return f"missing programs {', '.join(missing)} (bash env/setup installs slurm-wlm, munge)"
    try:
        import pwd

        pwd.getpwnam("munge")
    except KeyError:
        return "no user munge (Debian's munge package creates it)"
    return None


def _run(*argv: str, timeout: float = 30) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True,
                          timeout=timeout).stdout


def start_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Daemon:
    """A process we started, stopped by its pid while it is still the same process."""

    name: str
    proc: subprocess.Popen
    ticks: int | None
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                return
            if start_ticks(self.proc.pid) == self.ticks:
                try:
                    os.kill(self.proc.pid, sig)
                except ProcessLookupError:
                    return
            try:
                self.proc.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue


@dataclass
class ComputeNode:
    name: str  # Slurm's NodeName (the machine's name in the machines fixture)
    netns: str
    address: str  # its management address: NodeAddr, where its sshd listens
    sshd_pid: int
    device: str = "mgmt0"  # its interface on the management network

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"


@dataclass
class Cluster:
    workdir: Path
    conf: Path
    machines: Machines
    nodes: list[ComputeNode]
    daemons: dict[str, Daemon] = field(default_factory=dict)

    @property
    def user_key(self) -> Path:
        return self.machines.user_key

    @property
    def known_hosts(self) -> Path:
        return self.machines.known_hosts

    @property
    def switch_path(self) -> str:
        return f"/run/netns/{self.machines.switch}"

    @property
    def env(self) -> dict[str, str]:
        """The environment every Slurm command of a test (and the harness) runs with."""
        return {"SLURM_CONF": str(self.conf)}

    def command(self, *argv: str, timeout: float = 30, check: bool = True,
                env: dict | None = None) -> subprocess.CompletedProcess:
        """A command on the login node (the switch namespace, where slurmctld listens)."""
        return subprocess.run(["nsenter", f"--net={self.switch_path}", *argv],
                              capture_output=True, text=True, timeout=timeout, check=check,
                              env={**os.environ, **self.env, **(env or {})})

    def harness(self, *args: str, timeout: float = 300,
                env: dict | None = None) -> subprocess.CompletedProcess:
        """The harness CLI on the login node, as a user submits."""
        return self.command(sys.executable, "-m", "harness", *args, timeout=timeout,
                            check=False, env=env)

    def harness_on(self, node: ComputeNode, *args: str, timeout: float = 300,
                   env: dict | None = None) -> subprocess.CompletedProcess:
        """The harness CLI on a compute node (its network and UTS namespaces: its hostname),
        as a user runs it there after a job (``srun -w NODE harness lab clean``)."""
        return subprocess.run(["nsenter", f"--net={node.netns_path}",
                               f"--uts=/proc/{node.sshd_pid}/ns/uts", sys.executable, "-m",
                               "harness", *args], capture_output=True, text=True,
                              timeout=timeout, check=False,
                              env={**os.environ, **self.env, **(env or {})})

    def node_pids(self) -> dict[str, set[int]]:
        """The processes in each node's namespace (its sshd and slurmd among them)."""
        return {node.name: set(self.machines.processes(node.name)) | {node.sshd_pid}
                for node in self.nodes}

    def wait_idle(self, timeout: float = 60) -> None:
        """Until every node is idle (a job's epilogue and the node's release take a moment)."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.command("sinfo", "-h", "-N", "-o", "%N %t").stdout.split("\n")
            states = [s for s in states if s.strip()]
            if states and all(s.split()[1] == "idle" for s in states):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"nodes not idle after {timeout} s: {states}")
            time.sleep(0.5)


def _wait_for(check, what: str, daemon: Daemon | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if daemon is not None and not daemon.alive():
            raise RuntimeError(f"{what}: {daemon.name} exited:\n{daemon.log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            log = daemon.log.read_text()[-3000:] if daemon and daemon.log.exists() else ""
            raise RuntimeError(f"{what}: not ready after {timeout} s\n{log}")
        time.sleep(0.1)


def _start(stack: ExitStack, cluster: Cluster, name: str, argv: list[str],
           env: dict | None = None) -> Daemon:
    log = cluster.workdir / f"{name}.out"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **(env or {})})
    daemon = Daemon(name, proc, None, log)
    for _ in range(50):  # the start time, read once the process is there
        daemon.ticks = start_ticks(proc.pid)
        if daemon.ticks is not None or proc.poll() is not None:
            break
        time.sleep(0.01)
    cluster.daemons[name] = daemon
    stack.callback(daemon.stop)
    return daemon


def _slurm_conf(cluster: Cluster, ports: list[int], kill_wait: int) -> str:
    w = cluster.workdir
    host = socket.gethostname().split(".")[0]
    lines = [
        "ClusterName=harnesstest",
        f"SlurmctldHost={host}({MANAGEMENT}.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={w}/munge/munge.socket",
        f"StateSaveLocation={w}/state",
        f"SlurmdSpoolDir={w}/spool/%n",
        f"SlurmctldPidFile={w}/slurmctld.pid",
        f"SlurmdPidFile={w}/slurmd.%n.pid",
        f"SlurmctldLogFile={w}/slurmctld.log",
        f"SlurmdLogFile={w}/slurmd.%n.log",
        f"PlugStackConfig={w}/plugstack.conf",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        f"KillWait={kill_wait}",
        "MinJobAge=600",
        "InactiveLimit=0",
        "SchedulerParameters=sched_interval=2",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    names = ",".join(n.name for n in cluster.nodes)
    for node in cluster.nodes:
        lines.append(f"NodeName={node.name} NodeAddr={node.address} CPUs=2 RealMemory=1000 "
                     "State=UNKNOWN")
    lines.append(f"PartitionName=test Nodes={names} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


@contextmanager
def running_cluster(count: int = 2, kill_wait: int = 30, networks=(),
                    specs: list[MachineSpec] | None = None) -> Iterator[Cluster]:
    """munged, slurmctld and a slurmd on each machine: ``count`` machines n1, n2, ... with
    only their management port, or ``specs`` on ``networks`` (e.g. S4's client and server,
    whose node names are then theirs); all stopped on exit."""
    specs = specs or [MachineSpec(f"n{i + 1}", ()) for i in range(count)]
    with ExitStack() as stack:
        machines = stack.enter_context(running_machines(list(networks), specs))
        workdir = Path(tempfile.mkdtemp(prefix="harness-slurm-"))
        stack.callback(shutil.rmtree, workdir, True)
        os.chmod(workdir, 0o755)  # munged (user munge) must reach its own folder inside
        nodes = [ComputeNode(m.spec.name, m.netns, m.management_address, m.sshd_pid)
                 for m in machines.machines.values()]
        cluster = Cluster(workdir=workdir, conf=workdir / "slurm.conf", machines=machines,
                          nodes=nodes)
        # munge, entirely inside the work folder
        mdir = workdir / "munge"
        mdir.mkdir()
        os.chmod(mdir, 0o755)  # munged: "execute permissions for all required" on its socket dir
        (mdir / "munge.key").write_bytes(secrets.token_bytes(1024))
        os.chmod(mdir / "munge.key", 0o400)
        _run("chown", "-R", "munge:munge", str(mdir))
        munged = _start(stack, cluster, "munged", [
            "setpriv", "--reuid=munge", "--regid=munge", "--init-groups", "munged", "-F",
            "--key-file", f"{mdir}/munge.key",
            "--socket", f"{mdir}/munge.socket", "--pid-file", f"{mdir}/munged.pid",
            "--seed-file", f"{mdir}/munged.seed", "--log-file", f"{mdir}/munged.log"])
        _wait_for(lambda: (mdir / "munge.socket").exists(), "munged", munged, 15)
        # Slurm
        ports = [6817, 6818]  # Slurm's own: slurmctld and slurmd each in a namespace of ours
        (workdir / "plugstack.conf").write_text("")
        for sub in ("state", "spool"):
            (workdir / sub).mkdir()
        cluster.conf.write_text(_slurm_conf(cluster, ports, kill_wait))
        env = cluster.env
        ctld = _start(stack, cluster, "slurmctld", ["nsenter", f"--net={cluster.switch_path}",
                                                    "slurmctld", "-D", "-i"], env)
        _wait_for(lambda: cluster.command("scontrol", "ping", check=False).stdout.count("UP") > 0,
                  "slurmctld", ctld, 30)
        for node in cluster.nodes:
            (workdir / "spool" / node.name).mkdir()
            # in the machine's network and UTS namespaces (its hostname), the host's mounts
            _start(stack, cluster, f"slurmd-{node.name}", [
                "nsenter", f"--net={node.netns_path}", f"--uts=/proc/{node.sshd_pid}/ns/uts",
                "slurmd", "-D", "-N", node.name], env)
        _wait_for(lambda: _all_idle(cluster), "slurmd registration",
                  None, 60)
        try:
            yield cluster
        finally:
            _cancel_all(cluster)


def _all_idle(cluster: Cluster) -> bool:
    for name, daemon in cluster.daemons.items():
        if name.startswith("slurmd") and not daemon.alive():
            raise RuntimeError(f"{name} exited:\n{daemon.log.read_text()[-3000:]}\n"
                               + _tail(cluster.workdir / f"slurmd.{name[7:]}.log"))
    out = cluster.command("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.split()
    return len(out) == 2 * len(cluster.nodes) and all(s == "idle" for s in out[1::2])


def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _cancel_all(cluster: Cluster) -> None:
    """Cancel whatever jobs a failed test left, so slurmd stops with nothing running."""
    cluster.command("scancel", "--full", "--quiet", "--partition=test", check=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        queued = cluster.command("squeue", "-h", "-o", "%i", check=False).stdout.split()
        if not queued:
            return
        time.sleep(0.5)


if __name__ == "__main__":  # a manual check: start, show sinfo and one 2-node job, stop
    with running_cluster() as c:
        print(c.command("sinfo", "-N").stdout)
        job = c.command("sbatch", "--parsable", "-N2", "-o", f"{c.workdir}/hello.out", "--wrap",
                        "srun hostname").stdout.strip()
        for _ in range(100):
            if not c.command("squeue", "-h", "-j", job, check=False).stdout.strip():
                break
            time.sleep(0.3)
        print((c.workdir / "hello.out").read_text())
