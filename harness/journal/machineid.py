"""Which machine, and which boot of it: the identity every journal record carries.

Why: a pid, a start tick, a namespace or a /tmp path means something only on the
machine and in the boot that made it. A journal copied from a colleague, or one
left from before a reboot, names processes and files that are someone else's
now, so ``harness lab clean`` undoes a record only on the machine and boot it
names: hostname (/proc/sys/kernel/hostname) and boot id
(/proc/sys/kernel/random/boot_id, a random UUID the kernel draws at each boot).
Read with shell builtins only, so it costs one round trip to a node and no
process there (a process costs ~0.2 s in a TCG VM). For an SSH node the
round trip is made through its connection, which checks the host key first
(:class:`harness.nodes.ssh.SSHNode`): a node whose key is unknown or changed
is never asked.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache

BOOT_ID = "/proc/sys/kernel/random/boot_id"
HOSTNAME = "/proc/sys/kernel/hostname"
IDENTITY_SH = (f"read b <{BOOT_ID} && read h <{HOSTNAME} && "
               'printf "harness-machine %s %s\\n" "$h" "$b"')
_LINE = re.compile(r"^harness-machine (\S{1,253}) (\S{1,64})$", re.M)
#: A hostname as a machine names itself (RFC 1123 letters, digits, '-' and '.', and the '_'
#: some sites use), or the kernel's "(none)" for a machine that was never given one: never
#: a control character, so one read from a journal or a node cannot reach the terminal.
HOSTNAME_RE = re.compile(r"^(?:[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}|\(none\))\Z")
BOOT_ID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


@dataclass(frozen=True)
class MachineId:
    hostname: str
    boot_id: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data) -> MachineId | None:
        """The identity a record names; None if it names none or a malformed one (a
        hostname or boot id that is not one: :func:`valid`)."""
        if not isinstance(data, dict):
            return None
        return cls.valid(data.get("hostname"), data.get("boot_id"))

    @classmethod
    def valid(cls, host, boot) -> MachineId | None:
        """The identity of ``host`` and ``boot`` if both are what a machine reports (a
        hostname of :data:`HOSTNAME_RE`, a boot id UUID), else None: what a journal or a
        node says is checked where it is read, before it is compared or printed."""
        if isinstance(host, str) and isinstance(boot, str) and HOSTNAME_RE.match(host) \
                and BOOT_ID_RE.match(boot):
            return cls(host, boot)
        return None

    def describe(self) -> str:
        return f"{self.hostname} (boot {self.boot_id})"


@lru_cache(maxsize=1)
def local_identity() -> MachineId:
    """This machine's identity (the boot id cannot change while this process lives)."""
    with open(HOSTNAME) as fh:
        host = fh.read().strip()
    with open(BOOT_ID) as fh:
        boot = fh.read().strip()
    return MachineId(host, boot)


def parse_identity(text: str) -> MachineId | None:
    """The identity a node printed (:data:`IDENTITY_SH`); None if none or not a valid one."""
    found = _LINE.search(text or "")
    return MachineId.valid(found.group(1), found.group(2)) if found else None


def identity_of(machine) -> MachineId | None:
    """The identity of ``machine`` (a :class:`~harness.nodes.Node` that is a machine): read
    here for this machine, else by one command on it. None if it cannot be read."""
    if machine.is_local:
        return local_identity()
    res = machine.run(IDENTITY_SH, check=False, timeout=30)
    return parse_identity(res.stdout) if res.ok else None
