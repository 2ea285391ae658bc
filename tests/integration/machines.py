"""Machines the harness did not build: the harness knows them only through an inventory.

API (stable; the Slurm tests and the inventory tests use it)::

    from integration.machines import (MachineSpec, Port, Network, running_machines,
                                            s4_machines, skip_reason)

    with running_machines(networks, machines, unprivileged_user=False, sudo_on=()) as m:
        m.inventory_path          # inventory YAML naming every machine (user root)
        m.write_inventory(path, users={"server": m.user}, sudo={"server": False})
        m.harness("run", NB, "--inventory", inv, env=...)  # runs the CLI from the controller
        m.snapshot("client")      # addresses, routes, rules, qdiscs, MPTCP, net.* sysctls
        m.exec("client", "ip", "addr")   # the test's own look inside, never the harness's
        m.machines["client"].hostname, .management_address, .netns, .sshd_pid
        m.user                    # the unprivileged login, when asked for ("" otherwise)

``sudo_on`` names the machines where that user may ``sudo`` without a password (a
sudoers file of the machine's own, bound over /etc/sudoers in its mount namespace as its
/etc/hosts is: the host's /etc/sudoers is never touched); elsewhere sudo asks for a
password the user does not have.

``s4_machines()`` gives S4's client (two ports) and server, with the paths a user's own
router would give (the switch routes between its networks; the client's policy routing
per source address is configured here, as the user's network as found).

What each machine is (issue 25 part 1): a network namespace with its own hostname (a
UTS namespace), its own /run (a mount namespace with a private tmpfs on /run, so its own
machine lock and its own ``/run/harness-tracked``) and its own Debian OpenSSH sshd, key
authentication only, host key in the ``known_hosts`` the inventory names. The machines'
ports are veths into bridges that live in one more namespace, the *switch*: it joins
them the way a switch joins servers (and routes between the networks, the user's
router). The switch namespace also holds a management bridge with the controller's
address: :meth:`Machines.harness` runs the harness CLI with ``nsenter --net`` into the
switch namespace, so the harness reaches the machines over SSH only, and the host's own
interfaces, routes and firewall are never touched (nothing is created in the host's
network namespace at all).

Everything created is recorded in ``created`` as it is made and removed in reverse by
exact identity: processes by the pid sshd was started with (written to a pid file,
checked by start time), processes left in *our* namespaces by pid and start time,
namespaces by the names given them here, the temporary user by its name (only if we
created it), the work folder by its path. Never by pattern.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .nodes.sshd_fixture import _kill_and_wait, _netns_pids, _start_ticks

SSHD = "/usr/sbin/sshd"
PROGRAMS = ("ip", "nsenter", "unshare", "ssh-keygen", "useradd", "userdel", SSHD)
MANAGEMENT = "10.99.0"  # the management network inside the switch namespace (/24)
#: net.* keys that are counters or secrets, not settings: left out of snapshots (a NAT run's
#: conntrack entries outlive it by their timeouts)
COUNTERS = ("net.netfilter.nf_conntrack_count", "net.ipv6.conf.all.stable_secret",
            "net.ipv6.conf.default.stable_secret",
            # kernel-wide, shown in every namespace: other engineers' runs on this shared host
            # add and remove CUBIC there while ours runs (seen 2026-11-27: "reno bbr cubic"
            # before, "reno bbr" after, in a run that changes no sysctl at all)
            "net.ipv4.tcp_allowed_congestion_control")


def skip_reason() -> str | None:
    """Why machines cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root (namespaces, sshd)"
    missing = [p for p in PROGRAMS if shutil.which(p) is None and not os.access(p, os.X_OK)]
    return f"missing programs {', '.join(missing)}" if missing else None


@dataclass(frozen=True)
class Network:
    """A bridge in the switch namespace; ``gateway`` (CIDR) is the switch's own address on it."""

    name: str
    gateway: str = ""


@dataclass(frozen=True)
class Port:
    """One link of a machine: its interface name there, the network it plugs into, its address."""

    ifname: str
    network: str
    address: str  # CIDR


@dataclass(frozen=True)
class MachineSpec:
    name: str
    ports: tuple[Port, ...]
    #: ``ip`` commands (argument lists without "ip") run inside the machine after its ports
    #: are up: the routes and rules the user's network already has
    setup: tuple[tuple[str, ...], ...] = ()


@dataclass
class Machine:
    spec: MachineSpec
    netns: str
    hostname: str
    management_address: str
    host_key_pub: str = ""
    sshd_pid: int = 0
    sshd_ticks: int | None = None
    log: Path | None = None

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"


@dataclass
class Machines:
    workdir: Path
    switch: str  # the switch namespace's name (controller side)
    machines: dict[str, Machine]
    user_key: Path
    known_hosts: Path
    inventory_path: Path
    user: str = ""
    created: list[str] = field(default_factory=list)

    def inventory(self, users: dict[str, str] | None = None,
                  sudo: dict[str, bool] | None = None) -> dict:
        nodes = {}
        for name, m in self.machines.items():
            entry = {"host": m.management_address, "port": 22, "interfaces": {
                p.ifname: {"device": p.ifname, "address": p.address} for p in m.spec.ports}}
            if users and name in users:
                entry["user"] = users[name]
            if sudo and name in sudo:
                entry["sudo"] = sudo[name]
            nodes[name] = entry
        return {"ssh": {"user": "root", "key": str(self.user_key),
                        "known_hosts": str(self.known_hosts)}, "nodes": nodes}

    def write_inventory(self, path: Path, users: dict[str, str] | None = None,
                        sudo: dict[str, bool] | None = None) -> Path:
        path.write_text(yaml.safe_dump(self.inventory(users, sudo), sort_keys=False))
        return path

    def harness(self, *args: str, env: dict | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess:
        """The harness CLI run from the controller (the switch's management address)."""
        return subprocess.run(["nsenter", f"--net=/run/netns/{self.switch}", sys.executable,
                               "-m", "harness", *args],
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})

    def exec(self, name: str, *argv: str, check: bool = True) -> str:
        """The test's own look inside a machine (its network namespace), never the harness's."""
        return subprocess.run(["nsenter", f"--net={self.machines[name].netns_path}", *argv],
                              check=check, capture_output=True, text=True, timeout=60).stdout

    def snapshot(self, name: str) -> dict[str, str]:
        """What a run may change on a machine, as text: compare before and after."""
        def ip(*args: str) -> str:
            return self.exec(name, "ip", *args, check=False)

        sysctls = self.exec(name, "sysctl", "-a", check=False)
        return {
            "addresses": ip("-o", "addr", "show"),
            "links": ip("-o", "link", "show"),
            "routes": ip("route", "show", "table", "all"),
            "rules": ip("rule", "show"),
            "qdiscs": self.exec(name, "tc", "qdisc", "show", check=False),
            "mptcp_endpoints": ip("mptcp", "endpoint", "show"),
            "mptcp_limits": ip("mptcp", "limits", "show"),
            # the namespace's own settings (net.*); kernel-wide keys other engineers' runs
            # change on this shared host are left out
            "sysctls": "\n".join(line for line in sysctls.splitlines()
                                 if line.startswith("net.")
                                 and not line.startswith(COUNTERS)),
        }

    def processes(self, name: str) -> dict[int, int | None]:
        """Processes in the machine's namespace other than its sshd (pid -> start ticks)."""
        return {pid: t for pid, t in _netns_pids(self.machines[name].netns).items()
                if pid != self.machines[name].sshd_pid}


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout


def _keypair(path: Path, comment: str) -> str:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    return path.with_name(path.name + ".pub").read_text().strip()


def _sshd_config(workdir: Path, machine: Machine, host_key: Path) -> Path:
    config = workdir / f"sshd_config.{machine.spec.name}"
    config.write_text("\n".join([
        "Port 22", f"ListenAddress {machine.management_address}", f"HostKey {host_key}",
        f"AuthorizedKeysFile {workdir / 'authorized_keys'}", "PidFile none",
        "UsePAM no", "StrictModes no", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password", "MaxSessions 64", "MaxStartups 64",
        "Subsystem sftp internal-sftp", "LogLevel INFO", ""]))  # as Debian's default has sftp
    return config


def _settle(machines: dict[str, Machine], timeout: float = 10) -> None:
    """Wait until IPv6 duplicate address detection is over on every port: until then the
    kernel is still changing the machines' addresses by itself, and a snapshot taken before
    a run would differ from one taken after for no doing of the harness."""
    deadline = time.monotonic() + timeout
    for m in machines.values():
        while "tentative" in _run("ip", "-n", m.netns, "addr", "show"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{m.spec.name}: addresses still tentative after {timeout} s")
            time.sleep(0.1)


def _delete_netns(netns: str) -> None:
    _kill_and_wait(_netns_pids(netns))
    subprocess.run(["ip", "netns", "del", netns], check=False, timeout=30)


def _add_netns(stack: ExitStack, created: list[str], netns: str) -> None:
    _run("ip", "netns", "add", netns)
    created.append(f"netns {netns}")
    stack.callback(_delete_netns, netns)
    _run("ip", "-n", netns, "link", "set", "lo", "up")


def _stop_sshd(machine: Machine) -> None:
    if machine.sshd_pid:
        _kill_and_wait({machine.sshd_pid: machine.sshd_ticks})


def _add_user(stack: ExitStack, created: list[str], workdir: Path, name: str) -> None:
    try:
        pwd.getpwnam(name)
        raise RuntimeError(f"user {name} exists already: not ours to use or remove")
    except KeyError:
        pass
    home = workdir / f"home-{name}"
    # password "*": no password login, but not a locked account ("!"), which sshd without
    # PAM refuses even for key authentication
    _run("useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh",
         "--user-group", "--password", "*", name)
    created.append(f"user {name}")
    stack.callback(subprocess.run, ["userdel", name], check=False, capture_output=True)
    home.mkdir()
    shutil.chown(home, name, name)


def _sudoers(workdir: Path, machine: Machine, user: str) -> str:
    """A sudoers of the machine's own letting ``user`` run anything as root without a
    password; the command that binds it over /etc/sudoers inside the machine."""
    path = workdir / f"sudoers.{machine.spec.name}"
    path.write_text(f"root ALL=(ALL:ALL) ALL\n{user} ALL=(root) NOPASSWD: ALL\n")
    os.chmod(path, 0o440)  # sudo refuses a sudoers file others may write
    return f"mount --bind {path} /etc/sudoers && "


def _start_sshd(stack: ExitStack, workdir: Path, machine: Machine, config: Path,
                created: list[str], ready_timeout: float = 20, sudo_user: str = "") -> None:
    # its own /etc/hosts too (bound over the host's in the machine's mount namespace only):
    # a real machine resolves its own name (globus-gridftp-server refuses to start if not)
    hosts = workdir / f"hosts.{machine.spec.name}"
    hosts.write_text(f"127.0.0.1 localhost\n{machine.management_address} {machine.hostname}\n")
    os.chmod(hosts, 0o644)
    inner = (f"hostname {machine.hostname} && "
             f"mount -t tmpfs -o mode=755,size=16m harness-{machine.hostname} /run && "
             f"mount --bind {hosts} /etc/hosts && "
             + (_sudoers(workdir, machine, sudo_user) if sudo_user else "") +
             f"mkdir -m 755 /run/sshd && exec {SSHD} -D -e -f {config}")
    machine.log = workdir / f"sshd.{machine.spec.name}.log"
    with open(machine.log, "wb") as out:
        proc = subprocess.Popen(
            ["nsenter", f"--net={machine.netns_path}", "unshare", "--uts", "--mount",
             "--propagation", "private", "sh", "-c", inner],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    machine.sshd_pid = proc.pid
    for _ in range(100):
        machine.sshd_ticks = _start_ticks(proc.pid)
        if machine.sshd_ticks is not None or proc.poll() is not None:
            break
        time.sleep(0.01)
    (workdir / f"sshd.{machine.spec.name}.pid").write_text(
        f"{machine.sshd_pid} {machine.sshd_ticks}\n")
    created.append(f"sshd pid {machine.sshd_pid} on {machine.spec.name}")
    stack.callback(proc.wait, 10)  # reap it once stopped (no zombie left behind)
    stack.callback(_stop_sshd, machine)
    deadline = time.monotonic() + ready_timeout
    while "Server listening" not in machine.log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"sshd on {machine.spec.name} did not start:\n"
                               + machine.log.read_text(errors="replace")[-3000:])
        time.sleep(0.05)


@contextmanager
def running_machines(networks: list[Network], specs: list[MachineSpec],
                     unprivileged_user: bool = False,
                     sudo_on: tuple[str, ...] = ()) -> Iterator[Machines]:
    """Start the switch and the machines; remove all of it on exit, also on error."""
    tag = secrets.token_hex(3)
    workdir = Path(tempfile.mkdtemp(prefix="harness-machines-"))
    os.chmod(workdir, 0o755)  # sshd reads authorized_keys as the logging-in user
    switch = f"harness-mach-{tag}-sw"
    created: list[str] = [f"folder {workdir}"]
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, True)
        _add_netns(stack, created, switch)
        _run("ip", "netns", "exec", switch, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        bridges = {"mgmt": "br-mgmt"} | {n.name: f"br-{n.name}"[:15] for n in networks}
        for _name, bridge in bridges.items():
            _run("ip", "-n", switch, "link", "add", bridge, "type", "bridge")
            _run("ip", "-n", switch, "link", "set", bridge, "up")
        _run("ip", "-n", switch, "addr", "add", f"{MANAGEMENT}.1/24", "dev", "br-mgmt")
        for net in networks:
            if net.gateway:
                _run("ip", "-n", switch, "addr", "add", net.gateway, "dev", bridges[net.name])
        machines: dict[str, Machine] = {}
        for i, spec in enumerate(specs):
            m = machines[spec.name] = Machine(spec, f"harness-mach-{tag}-{spec.name}",
                                              f"{spec.name}-{tag}", f"{MANAGEMENT}.{11 + i}")
            _add_netns(stack, created, m.netns)
            for port in (Port("mgmt0", "mgmt", f"{m.management_address}/24"), *spec.ports):
                outer = f"m{i}-{port.ifname}"[:15]
                _run("ip", "-n", m.netns, "link", "add", port.ifname, "type", "veth", "peer",
                     "name", outer, "netns", switch)
                _run("ip", "-n", switch, "link", "set", outer, "master", bridges[port.network],
                     "up")
                _run("ip", "-n", m.netns, "addr", "add", port.address, "dev", port.ifname)
                _run("ip", "-n", m.netns, "link", "set", port.ifname, "up")
            for args in spec.setup:
                _run("ip", "-n", m.netns, *args)
        user_key = workdir / "user_ed25519"
        user_pub = _keypair(user_key, "harness-machines-user")
        (workdir / "authorized_keys").write_text(user_pub + "\n")
        os.chmod(workdir / "authorized_keys", 0o644)
        known = []
        for m in machines.values():
            m.host_key_pub = _keypair(workdir / f"host_{m.spec.name}", f"host-{m.hostname}")
            keytype, blob = m.host_key_pub.split()[:2]
            known.append(f"{m.management_address} {keytype} {blob}")
        known_hosts = workdir / "known_hosts"
        known_hosts.write_text("\n".join(known) + "\n")
        user = ""
        if unprivileged_user:
            user = f"hmu{tag}"
            _add_user(stack, created, workdir, user)
        for m in machines.values():
            _start_sshd(stack, workdir, m, _sshd_config(workdir, m, workdir /
                                                        f"host_{m.spec.name}"), created,
                        sudo_user=user if m.spec.name in sudo_on else "")
        _settle(machines)
        result = Machines(workdir, switch, machines, user_key, known_hosts,
                          workdir / "inventory.yaml", user, created)
        result.write_inventory(result.inventory_path)
        yield result


ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


@contextmanager
def congestion_allowed(name: str) -> Iterator[bool]:
    """``name`` in the kernel's allowed congestion controls while the machines run.

    A namespace is not a whole kernel: the allowed list is kernel-wide (the host's), and a
    child namespace may make only allowed controls its default (EPERM otherwise); a real
    machine's root sets its own default freely. S4 sets CUBIC on its nodes, so its machines
    need it allowed (this host allows "reno bbr"). Added only if missing; on exit the token
    we added is taken out of whatever the list then is (other runs on this shared host may
    have changed it meanwhile), nothing else. Yields whether it was added.
    """
    names = Path(ALLOWED_CC).read_text().split()
    if name in names:
        yield False
        return
    Path(ALLOWED_CC).write_text(" ".join([*names, name]))
    try:
        yield True
    finally:
        now = Path(ALLOWED_CC).read_text().split()
        if name in now:
            Path(ALLOWED_CC).write_text(" ".join(n for n in now if n != name))


def s4_networks() -> list[Network]:
    return [Network("a", "192.0.2.1/24"), Network("b", "198.51.100.1/24"),
            Network("c", "203.0.113.1/24")]


def s4_machines() -> list[MachineSpec]:
    """S4's client (two paths) and server; the switch routes between the three networks."""
    return [
        MachineSpec("client", (Port("eth0", "a", "192.0.2.10/24"),
                               Port("eth1", "b", "198.51.100.10/24")), setup=(
            ("route", "add", "203.0.113.0/24", "via", "192.0.2.1", "dev", "eth0"),
            ("route", "add", "203.0.113.0/24", "via", "192.0.2.1", "dev", "eth0",
             "table", "101"),
            ("route", "add", "203.0.113.0/24", "via", "198.51.100.1", "dev", "eth1",
             "table", "102"),
            ("rule", "add", "from", "192.0.2.10/32", "table", "101", "priority", "1001"),
            ("rule", "add", "from", "198.51.100.10/32", "table", "102", "priority", "1002"))),
        MachineSpec("server", (Port("eth0", "c", "203.0.113.5/24"),), setup=(
            ("route", "add", "192.0.2.0/24", "via", "203.0.113.1", "dev", "eth0"),
            ("route", "add", "198.51.100.0/24", "via", "203.0.113.1", "dev", "eth0"))),
    ]


def s0_networks() -> list[Network]:
    """S0's two private segments and the public one; the fronts route, not the switch."""
    return [Network("pa"), Network("pub"), Network("pb")]


def s0_machines() -> list[MachineSpec]:
    """S0's compute nodes a1, b1 and fronts fa, fb, with the routes a site has: the compute
    nodes reach the public side and the other private segment through their front, each
    front the other private segment through the other front ("direct" needs that)."""
    return [
        MachineSpec("a1", (Port("eth0", "pa", "10.1.0.2/24"),), setup=(
            ("route", "add", "198.18.0.0/24", "via", "10.1.0.1", "dev", "eth0"),
            ("route", "add", "10.2.0.0/24", "via", "10.1.0.1", "dev", "eth0"))),
        MachineSpec("fa", (Port("priv", "pa", "10.1.0.1/24"), Port("pub", "pub", "198.18.0.1/24")),
                    setup=(("route", "add", "10.2.0.0/24", "via", "198.18.0.2", "dev", "pub"),)),
        MachineSpec("fb", (Port("pub", "pub", "198.18.0.2/24"), Port("priv", "pb", "10.2.0.1/24")),
                    setup=(("route", "add", "10.1.0.0/24", "via", "198.18.0.1", "dev", "pub"),)),
        MachineSpec("b1", (Port("eth0", "pb", "10.2.0.2/24"),), setup=(
            ("route", "add", "198.18.0.0/24", "via", "10.2.0.1", "dev", "eth0"),
            ("route", "add", "10.1.0.0/24", "via", "10.2.0.1", "dev", "eth0"))),
    ]


if __name__ == "__main__":  # a manual check: start S4's machines, ssh to each, stop
    with running_machines(s4_networks(), s4_machines(), unprivileged_user=True) as ms:
        for machine in ms.machines.values():
            out = subprocess.run(
                ["nsenter", f"--net=/run/netns/{ms.switch}", "ssh", "-i", str(ms.user_key),
                 "-o", f"UserKnownHostsFile={ms.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                 "-o", "BatchMode=yes", f"root@{machine.management_address}",
                 "hostname; ls /run; ip -br addr"], capture_output=True, text=True, timeout=30)
            print(machine.spec.name, out.returncode, out.stdout, out.stderr)
        print(ms.created)
