"""Logging in to an SSH node: its key, the host-key check, and errors that say what to do.

Key authentication only: no password is ever passed. An encrypted private key must be in
ssh-agent, and the agent is offered only to nodes whose inventory says ``ssh_agent: true``:
an agent offers every key it holds, so a node that does not need it (or an impostor that
passed the host-key check of a careless known_hosts) would learn every public key and could
use a forwarded agent. Whatever paramiko or the socket layer raises while connecting becomes one
:class:`NodeError` naming the node and the fix.
"""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from ..errors import NodeError
from .hostkeys import check_host_keys, host_key_error


@dataclass(frozen=True)
class SSHEndpoint:
    """Where and as whom to log in, and how the node is named in errors."""

    where: str  # "SSH node 'a' (root@10.0.0.1:22)"
    host: str
    port: int
    user: str
    key_filename: str | None
    known_hosts_path: str
    accept_unknown_host: bool
    connect_timeout: float
    allow_agent: bool = False  # an inventory choice, off unless the node's entry asks

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def load_key(end: SSHEndpoint) -> paramiko.PKey | None:
    """The private key named by ``key_filename`` (None: agent and ~/.ssh/id_* only).

    Loaded here rather than by paramiko, whose per-type retry loop reports
    a refused key as "encountered RSA key, expected OPENSSH key".
    """
    if not end.key_filename:
        return None
    path = os.path.expanduser(end.key_filename)
    if not os.path.isfile(path):
        raise NodeError(
            f"{end.where}: private key file {end.key_filename} does not exist",
            "pass key_filename= pointing to an existing private key (not the .pub file)",
        )
    try:
        return paramiko.PKey.from_path(path)
    except TypeError:  # cryptography: "Password was not given but private key is encrypted"
        raise encrypted_key_error(end) from None
    except (ValueError, OSError, paramiko.SSHException) as exc:
        raise NodeError(
            f"{end.where}: cannot load private key {end.key_filename}: {exc}",
            "key_filename= must be an OpenSSH or PEM private key (RSA, ECDSA or Ed25519)",
        ) from None


def connect(end: SSHEndpoint, accepted: dict[str, paramiko.PKey]) -> paramiko.SSHClient:
    """A logged-in client; NodeError saying what to do on any failure.

    ``accepted``: the keys accepted on first use in this process (see :func:`check_host_keys`).
    """
    pkey = load_key(end)
    client = paramiko.SSHClient()
    check_host_keys(client, end.known_hosts_path, accepted, end.accept_unknown_host,
                    end.where)
    timeout = end.connect_timeout
    try:
        client.connect(
            end.host,
            end.port,
            username=end.user,
            password=None,
            pkey=pkey,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            channel_timeout=timeout,
            allow_agent=end.allow_agent,
            look_for_keys=pkey is None,
        )
    except BaseException as exc:
        # Past key exchange (host key verified) but not logged in: whatever
        # paramiko raised, the login was refused.
        transport = client.get_transport()
        in_auth = (
            transport is not None
            and transport.host_key is not None
            and not transport.is_authenticated()
        )
        client.close()
        if not isinstance(exc, Exception):
            raise  # KeyboardInterrupt, SystemExit
        if (
            in_auth
            and isinstance(exc, (paramiko.SSHException, EOFError))
            and not isinstance(exc, paramiko.BadHostKeyException)
        ):
            raise auth_error(end, exc) from None
        raise connect_error(end, exc) from None
    return client


def encrypted_key_error(end: SSHEndpoint) -> NodeError:
    return NodeError(
        f"{end.where}: private key {end.key_filename} is encrypted",
        f"load it into ssh-agent (`ssh-add {end.key_filename}`), leave key_filename"
        f" unset and allow the agent for this node (inventory `ssh_agent: true`);"
        f" the harness never asks for or stores passphrases",
    )


def auth_error(end: SSHEndpoint, exc: Exception) -> NodeError:
    keys = end.key_filename or ("the keys from ssh-agent and ~/.ssh/id_*" if end.allow_agent
                                else "the keys ~/.ssh/id_* (ssh-agent not allowed)")
    pub = f"{end.key_filename}.pub" if end.key_filename else "your public key"
    return NodeError(
        f"{end.where}: authentication as {end.user!r} failed with {keys} ({exc})",
        f"append {pub} to ~{end.user}/.ssh/authorized_keys on {end.host} (e.g. `ssh-copy-id"
        f" -i {pub} -p {end.port} {end.user}@{end.host}`) or pass the right"
        f" key_filename=; password login is deliberately not supported",
    )


def connect_error(end: SSHEndpoint, exc: Exception) -> NodeError:
    """Turn whatever paramiko or the socket layer raised into an error that says what to do."""
    where = end.where
    refused = host_key_error(exc, where, end.host, end.port, end.known_hosts_path)
    if refused is not None:
        return refused
    if isinstance(exc, paramiko.PasswordRequiredException):
        return encrypted_key_error(end)
    if isinstance(exc, paramiko.AuthenticationException) or (
        isinstance(exc, paramiko.SSHException)
        and "No authentication methods available" in str(exc)
    ):
        return auth_error(end, exc)
    if isinstance(exc, NoValidConnectionsError):
        errnos = {e.errno for e in exc.errors.values()}
        if errnos == {errno.ECONNREFUSED}:
            return NodeError(
                f"{where}: cannot connect to {end.address}: connection refused",
                f"is sshd running on {end.host} and listening on port {end.port}? check the"
                f" host and port in the inventory",
            )
        return NodeError(
            f"{where}: cannot connect to {end.address}: {exc}",
            f"check that {end.host} is up and routable from this machine",
        )
    if isinstance(exc, socket.gaierror):
        return NodeError(
            f"{where}: cannot resolve host name {end.host!r}: {exc.strerror or exc}",
            "check the spelling in the inventory, or give an IP address",
        )
    if isinstance(exc, TimeoutError):
        return NodeError(
            f"{where}: no answer from {end.address} within {end.connect_timeout:g}s",
            f"check that {end.host} is up, reachable from this machine and that port"
            f" {end.port} is not filtered; or raise connect_timeout",
        )
    if isinstance(exc, OSError):
        return NodeError(
            f"{where}: cannot connect to {end.address}: {exc.strerror or exc}",
            f"check that {end.host} is up and routable from this machine",
        )
    if isinstance(exc, (paramiko.SSHException, EOFError)):
        return NodeError(
            f"{where}: SSH handshake with {end.address} failed: {exc or type(exc).__name__}",
            f"check that an SSH server (not another service) listens on port {end.port} of"
            f" {end.host} and answers within connect_timeout={end.connect_timeout:g}s",
        )
    return NodeError(f"{where}: connecting failed: {type(exc).__name__}: {exc}")
