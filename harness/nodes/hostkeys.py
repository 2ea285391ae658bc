"""Host keys: checked against known_hosts like OpenSSH does, remembered only when asked.

The policy, in one place:

- A host whose key is in ``known_hosts`` must offer that key. A *changed* key
  is always refused, whatever the caller opted into, because that is what a
  man in the middle looks like (paramiko raises ``BadHostKeyException``).
- An *unknown* key is refused unless the caller opts in with
  ``accept_unknown_host=True`` (trust on first use): the key is then appended
  to ``known_hosts`` (never rewriting the file) and kept in memory, so a
  reconnect to a changed key is refused even if the file could not be written.
- Every refusal shows the SHA256 fingerprint, as ``ssh-keygen -lf`` prints
  it, and the command that fixes it after verification.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from collections.abc import Callable

import paramiko
from paramiko.hostkeys import HostKeyEntry

from ..errors import NodeError

log = logging.getLogger(__name__)

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style SHA256 fingerprint, as ``ssh-keygen -lf`` prints it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class UnknownHostKey(Exception):
    """Raised inside paramiko's handshake; turned into a NodeError by :func:`host_key_error`."""

    def __init__(self, key: paramiko.PKey):
        super().__init__("unknown host key")
        self.key = key


class HostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko only when known_hosts has *no* key for the host.

    (A host with a known key that offers a different one never gets here:
    paramiko raises BadHostKeyException, whatever the policy.)
    """

    def __init__(self, accept_unknown: bool, remember: Callable[[str, paramiko.PKey], None]):
        self.accept_unknown = accept_unknown
        self.remember = remember

    def missing_host_key(self, client, hostname, key):
        if not self.accept_unknown:
            raise UnknownHostKey(key)
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.remember(hostname, key)


def check_host_keys(client: paramiko.SSHClient, path: str, accepted: dict[str, paramiko.PKey],
                    accept_unknown: bool, where: str) -> None:
    """Make ``client`` verify host keys: known_hosts at ``path``, keys ``accepted`` earlier in
    this process, and the policy for unknown ones (which adds to ``accepted``)."""
    if os.path.exists(path):
        try:
            client.load_host_keys(path)
        except (OSError, paramiko.SSHException) as exc:
            raise NodeError(
                f"{where}: cannot read known_hosts file {path}: {exc}",
                "fix or move the file; `ssh-keygen -F HOST -f FILE` shows what it holds",
            ) from None
    for hostname, key in accepted.items():
        client.get_host_keys().add(hostname, key.get_name(), key)

    def remember(hostname: str, key: paramiko.PKey) -> None:
        accepted[hostname] = key
        remember_host_key(path, hostname, key, where)

    client.set_missing_host_key_policy(HostKeyPolicy(accept_unknown, remember))


def remember_host_key(path: str, hostname: str, key: paramiko.PKey, where: str) -> None:
    """Trust on first use: append the key to known_hosts (never rewrite the file)."""
    line = HostKeyEntry([hostname], key).to_line()
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(line)
    except OSError as exc:
        log.warning("%s: accepted host key %s %s but could not save it to %s: %s",
                    where, key.get_name(), fingerprint(key), path, exc)
    else:
        log.warning("%s: accepted unknown host key %s %s and added it to %s",
                    where, key.get_name(), fingerprint(key), path)


def host_key_error(exc: BaseException, where: str, host: str, port: int,
                   known_hosts: str) -> NodeError | None:
    """The refusal for an unknown or changed host key; None if ``exc`` is about something else."""
    address, kh = f"{host}:{port}", known_hosts
    if isinstance(exc, UnknownHostKey):
        key = exc.key
        return NodeError(
            f"{where}: host key of {address} is not known: the server offered"
            f" {key.get_name()} key {fingerprint(key)}, and {kh} has no entry for it",
            f"verify that fingerprint on the host itself (`ssh-keygen -lf "
            f"/etc/ssh/ssh_host_*_key.pub`), then add the key with `ssh-keyscan -p {port}"
            f" {host} >> {kh}`; or, for a lab host you just created, pass"
            f" accept_unknown_host=True to trust it on first use",
        )
    if isinstance(exc, paramiko.BadHostKeyException):
        return NodeError(
            f"{where}: host key of {address} has CHANGED: {kh} expects"
            f" {exc.expected_key.get_name()} {fingerprint(exc.expected_key)}, the server"
            f" offered {exc.key.get_name()} {fingerprint(exc.key)}. Someone may be"
            f" intercepting the connection, or the host was reinstalled",
            f"if the change is expected, remove the old entry with `ssh-keygen -R"
            f" '[{host}]:{port}' -f {kh}` (or `-R {host}` for port 22) and add"
            f" the new key after verifying it; accept_unknown_host never overrides this",
        )
    return None
