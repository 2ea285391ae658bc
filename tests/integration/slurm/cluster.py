"""A real Slurm cluster on this one machine, for the tests: munged, slurmctld and N slurmd.

Each compute node is a network namespace with a veth into a bridge on the host, its own
hostname (a UTS namespace) and its own sshd (its own /run, so its own machine lock): the
harness inside a job reaches the allocation's nodes over SSH only, as on a real cluster.
slurmctld runs on the host, on the bridge's address.

Why it is built this way (PLATFORM.md "Slurm on one machine", checked again 2026-11-26):

- each slurmd is started with ``nsenter --net=NS unshare --uts``, not ``ip netns exec``:
  the latter remounts /sys and slurmd then dies with "No filesystem mounted on
  /sys/fs/cgroup"; ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``
  need no cgroup of their own;
- nothing of the host's Slurm or munge configuration is used or changed: munged runs as
  user munge with its key, socket, pid and seed files in this cluster's temporary folder
  (``--key-file``, ``--socket``); slurm.conf is there too and every Slurm command finds
  it through ``SLURM_CONF`` (and the munge socket through its ``AuthInfo``);
- every daemon is started in the foreground by us (``-D``/``-F``) and stopped by the pid we
  recorded, checked by its start time; namespaces, links and the bridge are deleted by the
  names we gave them; the temporary folder by its path.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.nodes.sshd_fixture import _kill_and_wait, _netns_pids

SSHD = "/usr/sbin/sshd"
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel",
            "nsenter", "unshare", "ssh-keygen", "setpriv", SSHD)


def skip_reason() -> str | None:
    """Why a real Slurm cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root (namespaces, daemons)"
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
    name: str  # Slurm's NodeName and the namespace's hostname
    netns: str
    address: str  # on the bridge (NodeAddr), also where its sshd listens
    device: str = "eth0"  # the node's interface into the bridge
    host_key_pub: str = ""

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"


@dataclass
class Cluster:
    workdir: Path
    conf: Path
    bridge: str
    bridge_address: str
    nodes: list[ComputeNode]
    user_key: Path
    known_hosts: Path
    daemons: dict[str, Daemon] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment every Slurm command of a test (and the harness) runs with."""
        return {"SLURM_CONF": str(self.conf)}

    def command(self, *argv: str, timeout: float = 30, check: bool = True,
                env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check,
                              env={**os.environ, **self.env, **(env or {})})

    def inventory_template(self) -> str:
        """The template for a study whose roles each have one interface ``eth0``."""
        return ("ssh:\n"
                "  user: root\n"
                f"  key: {self.user_key}\n"
                f"  known_hosts: {self.known_hosts}\n")

    def node_pids(self) -> dict[str, set[int]]:
        """The processes in each node's namespace (its sshd and slurmd among them)."""
        out = {}
        for node in self.nodes:
            text = subprocess.run(["ip", "netns", "pids", node.netns], capture_output=True,
                                  text=True).stdout
            out[node.name] = {int(p) for p in text.split()}
        return out

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


def _free_ports(count: int) -> list[int]:
    """Consecutive TCP ports free on the host, from a range the harness's labs do not use."""
    for _ in range(50):
        base = 30000 + secrets.randbelow(2000) * 2
        ports = list(range(base, base + count))
        try:
            for port in ports:
                with socket.socket() as s:
                    s.bind(("0.0.0.0", port))
            return ports
        except OSError:
            continue
    raise RuntimeError("no free ports for slurmctld/slurmd")


def _free_subnet() -> int:
    """A third octet x so that 198.19.x.0/24 (RFC 2544, outside the labs' 198.18/15 use of
    198.19.0.0/24) is on none of the host's interfaces."""
    used = _run("ip", "-4", "-o", "addr", "show")
    for _ in range(50):
        octet = 200 + secrets.randbelow(50)
        if f"198.19.{octet}." not in used:
            return octet
    raise RuntimeError("no free 198.19.x.0/24 for the cluster's bridge")


def _keypair(path: Path, comment: str) -> str:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    return path.with_name(path.name + ".pub").read_text().strip()


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
        f"SlurmctldHost={host}({cluster.bridge_address})",
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


def _sshd_config(cluster: Cluster, node: ComputeNode, host_key: Path) -> Path:
    config = cluster.workdir / f"sshd_config.{node.name}"
    config.write_text("\n".join([
        "Port 22", f"ListenAddress {node.address}", f"HostKey {host_key}",
        f"AuthorizedKeysFile {cluster.workdir / 'authorized_keys'}", "PidFile none",
        "UsePAM no", "StrictModes no", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password", "MaxSessions 64", "MaxStartups 64",
        "LogLevel INFO", ""]))
    return config


@contextmanager
def running_cluster(count: int = 2, kill_wait: int = 30) -> Iterator[Cluster]:
    """munged, slurmctld and ``count`` slurmd (each with its sshd); all stopped on exit."""
    tag = secrets.token_hex(2)
    octet = _free_subnet()
    workdir = Path(tempfile.mkdtemp(prefix="harness-slurm-"))
    os.chmod(workdir, 0o755)  # munged (user munge) must reach its own folder inside
    cluster = Cluster(workdir=workdir, conf=workdir / "slurm.conf", bridge=f"hsl{tag}br",
                      bridge_address=f"198.19.{octet}.1",
                      nodes=[ComputeNode(f"n{i + 1}", f"hsl{tag}n{i + 1}",
                                         f"198.19.{octet}.{11 + i}") for i in range(count)],
                      user_key=workdir / "user_ed25519", known_hosts=workdir / "known_hosts")
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, True)
        # the network: a bridge on the host, a namespace per node with a veth into it
        _run("ip", "link", "add", cluster.bridge, "type", "bridge")
        stack.callback(subprocess.run, ["ip", "link", "del", cluster.bridge], check=False)
        _run("ip", "addr", "add", f"{cluster.bridge_address}/24", "dev", cluster.bridge)
        _run("ip", "link", "set", cluster.bridge, "up")
        for node in cluster.nodes:
            _run("ip", "netns", "add", node.netns)
            stack.callback(_delete_netns, node.netns)
            outer = f"{node.netns}h"
            _run("ip", "link", "add", outer, "type", "veth", "peer", "name", node.device,
                 "netns", node.netns)
            stack.callback(subprocess.run, ["ip", "link", "del", outer], check=False,
                           capture_output=True)
            _run("ip", "link", "set", outer, "master", cluster.bridge, "up")
            _run("ip", "-n", node.netns, "addr", "add", f"{node.address}/24", "dev", node.device)
            _run("ip", "-n", node.netns, "link", "set", node.device, "up")
            _run("ip", "-n", node.netns, "link", "set", "lo", "up")
        # SSH: one user key, a host key per node, a known_hosts naming each node's address
        user_pub = _keypair(cluster.user_key, "harness-slurm-test-user")
        (workdir / "authorized_keys").write_text(user_pub + "\n")
        known = []
        for node in cluster.nodes:
            node.host_key_pub = _keypair(workdir / f"host_{node.name}", f"host-{node.name}")
            keytype, blob = node.host_key_pub.split()[:2]
            known.append(f"{node.address} {keytype} {blob}")
        cluster.known_hosts.write_text("\n".join(known) + "\n")
        # munge, entirely inside the work folder
        mdir = workdir / "munge"
        mdir.mkdir()
        os.chmod(mdir, 0o755)  # munged: "execute permissions for all required" on its socket dir
        (mdir / "munge.key").write_bytes(secrets.token_bytes(1024))
        os.chmod(mdir / "munge.key", 0o400)
        _run("chown", "-R", "munge:munge", str(mdir))
        munged = _start(stack, cluster, "munged", [
            "setpriv", "--reuid=munge", "--regid=munge", "--init-groups", "munged", "-F", "--key-file", f"{mdir}/munge.key",
            "--socket", f"{mdir}/munge.socket", "--pid-file", f"{mdir}/munged.pid",
            "--seed-file", f"{mdir}/munged.seed", "--log-file", f"{mdir}/munged.log"])
        _wait_for(lambda: (mdir / "munge.socket").exists(), "munged", munged, 15)
        # Slurm
        ports = _free_ports(2)
        (workdir / "plugstack.conf").write_text("")
        for sub in ("state", "spool"):
            (workdir / sub).mkdir()
        cluster.conf.write_text(_slurm_conf(cluster, ports, kill_wait))
        env = cluster.env
        ctld = _start(stack, cluster, "slurmctld", ["slurmctld", "-D", "-i"], env)
        _wait_for(lambda: cluster.command("scontrol", "ping", check=False).stdout.count("UP") > 0,
                  "slurmctld", ctld, 30)
        for node in cluster.nodes:
            sshd_config = _sshd_config(cluster, node, workdir / f"host_{node.name}")
            inner = (f"hostname {node.name} && "
                     f"mount -t tmpfs -o mode=755,size=4m harness-{node.name} /run && "
                     f"mkdir -m 755 /run/sshd && exec {SSHD} -D -e -f {sshd_config}")
            sshd = _start(stack, cluster, f"sshd-{node.name}", [
                "nsenter", f"--net={node.netns_path}", "unshare", "--uts", "--mount",
                "--propagation", "private", "sh", "-c", inner])
            _wait_for(lambda s=sshd: "Server listening" in s.log.read_text(errors="replace"),
                      f"sshd on {node.name}", sshd, 15)
            (workdir / "spool" / node.name).mkdir()
            _start(stack, cluster, f"slurmd-{node.name}", [
                "nsenter", f"--net={node.netns_path}", "unshare", "--uts", "sh", "-c",
                f"hostname {node.name} && exec slurmd -D -N {node.name}"], env)
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


def _delete_netns(netns: str) -> None:
    """Stop what still runs in our namespace (sshd's per-connection children), by pid and
    start time, then delete it."""
    _kill_and_wait(_netns_pids(netns))
    subprocess.run(["ip", "netns", "del", netns], check=False, timeout=30)


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
