"""An inventory machine whose login is not root but may use ``sudo -n``.

The inventory says so per machine (``sudo: true``, see :mod:`harness.machines.inventory`); without
it a login that is not root never gets root from the harness. Every command on such a
machine -- facts, changes, their undo, tracked tools, the machine lock -- runs as root
through ``sudo -n -- sh -c CMD``: ``-n`` because the harness never types a password (a
sudo that asks for one fails at once, and :func:`harness.machines.privileges.read_access` reports
its words before anything runs). One wrapper at the transport, not a ``sudo`` written into
each operation: an operation's command and its undo then run with the same privilege, and
one forgotten ``sudo`` cannot leave a change that its undo cannot take back.

File copies (SFTP) are the login's own: they are not commands and cannot go through sudo.
"""

from __future__ import annotations

import shlex

from ..errors import NodeError
from .ssh import SSHNode

SUDO = "sudo -n --"


def sudo_command(cmd: str) -> str:
    """``cmd`` run as root by ``sudo -n`` (no password prompt: fail instead)."""
    return f"{SUDO} sh -c {shlex.quote(cmd)}"


class SudoRefused(NodeError):
    """The inventory allows sudo on a machine, but ``sudo -n`` does not run a command there."""


class SudoSSHNode(SSHNode):
    """An SSH machine whose every command runs as root through ``sudo -n``.

    Before its first command, ``sudo -n true`` once: a sudo that wants a password (or has
    no rule for the login) stops the run there with sudo's own words, instead of every
    command failing with them later."""

    sudo = True
    _sudo_checked = False

    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        if not self._sudo_checked:
            status, out, err = super()._execute(sudo_command("true"), 30, None)
            if status != 0:
                raise SudoRefused(
                    f"{self._where()}: the inventory allows sudo here, but `sudo -n` does not "
                    f"give root: {(err or out).strip()[-300:] or f'exit status {status}'}",
                    "give the login a NOPASSWD rule (e.g. `USER ALL=(root) NOPASSWD: ALL` in "
                    "/etc/sudoers.d/, edited with visudo): the harness never types a password; "
                    "or set sudo: false to measure the machines as found. Nothing was changed.")
            self._sudo_checked = True
        return super()._execute(sudo_command(cmd), timeout, stdin)

    def login_command(self, cmd: str, timeout: float = 20) -> tuple[int, str, str]:
        """``cmd`` as the login itself, without sudo (who the login is)."""
        return super()._execute(cmd, timeout, None)

    def describe(self) -> dict:
        return {**super().describe(), "sudo": True}
