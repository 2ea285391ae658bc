"""An inventory built from a Slurm allocation: the allocation's hosts onto the study's roles.

Inside a job (or an ``salloc``), ``harness run NB --inventory slurm`` reads the hosts Slurm
gave it (``scontrol show hostnames "$SLURM_JOB_NODELIST"``, in that order) and puts them
onto the study's machine roles in topology order (the first host takes the first role).
What Slurm cannot know -- SSH user, key and known_hosts, which device and address each
role's interfaces are -- comes from an inventory template: an inventory (docs/how-to/
own-machines.md) whose nodes may leave out ``host`` and whose values may name the allocated host::

    ssh: {user: root, key: ~/.ssh/id_ed25519, known_hosts: ~/.ssh/known_hosts}
    nodes:                      # optional: roles not listed get only host: {node_addr}
      client:
        interfaces:
          eth0: {device: ib0, address: "{ip}/16"}
    interfaces:                 # optional: the same for every role (a role's own wins)
      eth0: {device: ib0, address: "{ip}/16"}

Placeholders: ``{hostname}`` (Slurm's node name), ``{node_addr}`` (its NodeAddr, the address
slurmctld reaches it on; the node name when the cluster sets none), ``{ip}`` (``node_addr``
resolved to an IPv4 address), ``{index}`` (0 for the first role). ``host`` defaults to
``{node_addr}``. The built inventory is checked like any other before anything changes.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import SpecError
from .sbatch import SlurmError

PLACEHOLDER = re.compile(r"\{(\w+)\}")
KNOWN = ("hostname", "node_addr", "ip", "index")
TEMPLATE_KEYS = {"ssh", "nodes", "interfaces"}


@dataclass(frozen=True)
class AllocatedHost:
    hostname: str
    node_addr: str

    def values(self, index: int) -> dict[str, str]:
        return {"hostname": self.hostname, "node_addr": self.node_addr, "ip": _ipv4(self),
                "index": str(index)}


def _ipv4(host: AllocatedHost) -> str:
    try:
        ipaddress.ip_address(host.node_addr)
        return host.node_addr
    except ValueError:
        pass
    try:
        return socket.gethostbyname(host.node_addr)
    except OSError as exc:
        raise SpecError(f"Slurm node {host.hostname}: its address {host.node_addr!r} does not "
                        f"resolve ({exc})",
                        "use {node_addr} or a literal address in the inventory template") from None


def load_template(source: str) -> dict:
    """The template's YAML from a file, or from stdin for ``-`` (the job script's here-doc)."""
    import sys

    if source == "-":
        text, where = sys.stdin.read(), "<stdin>"
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise SpecError(f"inventory template {source} does not exist",
                            "give a YAML template (see harness/slurm/allocation.py)")
        text, where = path.read_text(), str(path)
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SpecError(f"inventory template {where} is not valid YAML: {exc}") from None
    return check_template(data, where)


def check_template(data, where: str) -> dict:
    if not isinstance(data, dict):
        raise SpecError(f"inventory template {where} must be a mapping",
                        "see the format in harness/slurm/allocation.py")
    unknown = set(data) - TEMPLATE_KEYS
    if unknown:
        raise SpecError(f"inventory template {where} has unknown keys {sorted(unknown)}",
                        "use ssh, nodes and interfaces")
    for key in ("ssh", "nodes", "interfaces"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise SpecError(f"inventory template {where}: {key} must be a mapping")
    for name in _placeholders(data):
        if name not in KNOWN:
            raise SpecError(f"inventory template {where} uses {{{name}}}",
                            f"the placeholders are {', '.join('{' + k + '}' for k in KNOWN)}")
    return data


def _placeholders(value) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_placeholders(v) for v in value)) if value else set()
    return set(PLACEHOLDER.findall(value)) if isinstance(value, str) else set()


def _fill(value, values: dict[str, str]):
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
    return value


def roles(topology, template: dict) -> list[str]:
    """The study's machine roles in topology order: every node that is not a router, and the
    routers the template lists (a router left out is the cluster's own network)."""
    listed = set(template.get("nodes") or {})
    return [n.name for n in topology.nodes if not n.forwarding or n.name in listed]


def build(topology, template: dict, hosts: list[AllocatedHost]) -> dict:
    """The inventory (as data) for ``hosts`` in allocation order onto the study's roles."""
    wanted = roles(topology, template)
    nodes_t = template.get("nodes") or {}
    strays = sorted(set(nodes_t) - {n.name for n in topology.nodes})
    if strays:
        raise SpecError(f"inventory template names {strays}, which study topology "
                        f"{topology.name!r} does not have",
                        f"its roles are {', '.join(wanted)}")
    if len(hosts) < len(wanted):
        raise SpecError(f"the allocation has {len(hosts)} node(s) for {len(wanted)} roles "
                        f"({', '.join(wanted)})",
                        f"allocate {len(wanted)} nodes: salloc --nodes={len(wanted)} --exclusive")
    nodes = {}
    for index, (role, host) in enumerate(zip(wanted, hosts)):
        entry = {"host": "{node_addr}",
                 **({"interfaces": template["interfaces"]} if template.get("interfaces") else {}),
                 **(nodes_t.get(role) or {})}
        nodes[role] = _fill(entry, host.values(index))
    out = {"nodes": nodes}
    if template.get("ssh"):
        out["ssh"] = template["ssh"]
    return out


def allocated_hosts(node_list: str | None = None) -> list[AllocatedHost]:
    """The allocation's hosts in Slurm's order, with the address slurmctld reaches each on."""
    node_list = node_list or os.environ.get("SLURM_JOB_NODELIST")
    if not node_list:
        raise SpecError("--inventory slurm needs a Slurm allocation, and SLURM_JOB_NODELIST is "
                        "not set",
                        "run it inside a job or `salloc --nodes=N --exclusive`, or submit with "
                        "--slurm \"OPTIONS\"")
    names = _scontrol("show", "hostnames", node_list).split()
    addrs = _node_addrs(names)
    return [AllocatedHost(name, addrs.get(name) or name) for name in names]


def _node_addrs(names: list[str]) -> dict[str, str]:
    out = {}
    text = _scontrol("show", "node", "-o", ",".join(names))
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("NodeName"):
            out[fields["NodeName"]] = fields.get("NodeAddr") or fields["NodeName"]
    return out


def _scontrol(*args: str) -> str:
    try:
        result = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise SlurmError("scontrol is not on PATH", "run inside a Slurm allocation") from None
    if result.returncode != 0:
        raise SlurmError(f"scontrol {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def write_inventory(inventory: dict, folder: Path, name: str = "inventory") -> Path:
    """``folder/NAME.yaml``, created exclusively (``NAME-2.yaml`` ... when taken): nothing
    is ever overwritten."""
    folder.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(inventory, sort_keys=False)
    for n in range(1, 1000):
        path = folder / (f"{name}.yaml" if n == 1 else f"{name}-{n}.yaml")
        try:
            with open(path, "x") as fh:
                fh.write(text)
            return path
        except FileExistsError:
            continue
    raise SpecError(f"{folder} holds 999 inventories named {name}", "clean up that folder")


def job_inventory_name(env: dict | None = None) -> str:
    """``JOB`` or ``ARRAYJOB_TASK``: the allocation's inventory is kept under the job's name
    in the data folder (``slurm/inventories``), beside its log, rather than in a temporary
    folder of the node -- a job killed hard would leave that behind, and ``harness rerun``
    of the run finds the hosts again."""
    import os

    env = os.environ if env is None else env
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID") or "allocation"
