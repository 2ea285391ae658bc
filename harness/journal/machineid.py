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
_LINE = re.compile(r"^harness-machine (\S{1,253}) ([0-9a-f-]{36})$", re.M)


@dataclass(frozen=True)
class MachineId:
    hostname: str
    boot_id: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data) -> MachineId | None:
        """The identity a record names; None if it names none or a malformed one."""
        if not isinstance(data, dict):
            return None
        host, boot = data.get("hostname"), data.get("boot_id")
        if not (isinstance(host, str) and isinstance(boot, str) and host and boot):
            return None
        return cls(host, boot)

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
    found = _LINE.search(text or "")
    return MachineId(found.group(1), found.group(2)) if found else None


def identity_of(machine) -> MachineId | None:
    """The identity of ``machine`` (a :class:`~harness.nodes.Node` that is a machine): read
    here for this machine, else by one command on it. None if it cannot be read."""
    if machine.is_local:
        return local_identity()
    res = machine.run(IDENTITY_SH, check=False, timeout=30)
    return parse_identity(res.stdout) if res.ok else None
