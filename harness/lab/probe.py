"""What a node can do: kernel features, congestion controls, tool versions.

Every feature is tested for real, inside a throw-away network namespace made
with ``unshare --net`` (the kernel removes it when the probe exits, so the
probe changes nothing), rather than guessed from config files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from ..errors import CapabilityMissing
from ..nodes import Node
from ..nodes.base import SYSTEM_BIN
from ..tools.registry import Tool, all_tools, lookup, registered

# feature -> (what it is, how to get it)
FEATURES: dict[str, tuple[str, str]] = {
    "netns": ("network namespaces", "a kernel with CONFIG_NET_NS"),
    "veth": ("veth pairs", "a kernel with CONFIG_VETH"),
    "htb": ("tc htb rate shaping", "a kernel with CONFIG_NET_SCH_HTB"),
    "tbf": ("tc tbf rate shaping", "a kernel with CONFIG_NET_SCH_TBF"),
    "netem": ("tc netem delay/loss emulation", "a kernel with sch_netem (Debian's stock kernel "
              "has it: run the study in a VM lab)"),
    "mptcp": ("Multipath TCP (upstream v1)", "Linux >= 5.6 with CONFIG_MPTCP and "
              "net.mptcp.enabled=1"),
    "tipc": ("TIPC sockets", "the tipc kernel module (Debian's stock kernel: modprobe tipc)"),
    "sctp": ("SCTP sockets", "the sctp kernel module (Debian's stock kernel: modprobe sctp)"),
    "rdma_rxe": ("Soft-RoCE (rdma_rxe)", "the rdma_rxe kernel module and rdma-core"),
    "nfsd": ("kernel NFS server", "the nfsd kernel module and nfs-kernel-server"),
    "nfs": ("NFSv4 server and client (harness.config.nfs)", "the nfsd and nfsv4 kernel modules "
            "(Debian's stock kernel: run the study in the VM lab) and apt-get install "
            "nfs-kernel-server nfs-common (rpc.nfsd, rpc.mountd, exportfs, mount.nfs4)"),
    "glusterfs": ("GlusterFS server and FUSE client (harness.config.glusterfs)", "apt-get "
                  "install glusterfs-server glusterfs-client (glusterd, gluster, "
                  "mount.glusterfs) and a kernel with fuse"),
    "nat": ("nftables NAT", "a kernel with nf_tables + nf_nat, and the nftables package"),
    # Not a kernel feature: tested outside the throw-away namespace (mmlscluster needs the
    # cluster's network), by harness.config.gpfs.gpfs_member.
    "gpfs": ("IBM Storage Scale (GPFS) cluster membership", "IBM Storage Scale installed "
             "(/usr/lpp/mmfs/bin) and the node in an active cluster: real machines only"),
}


# Runs inside `unshare --net`: a private, empty network namespace.
_FEATURE_SCRIPT = r"""
import json, os, shutil, socket, subprocess
out = {}
def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True).returncode == 0
out["netns"] = True
sh("ip link set lo up")
out["veth"] = sh("ip link add hp0 type veth peer name hp1")
out["htb"] = sh("tc qdisc add dev lo root handle 1: htb default 1") and sh("tc qdisc del dev lo root")
out["tbf"] = (sh("tc qdisc add dev lo root tbf rate 10mbit burst 32kb latency 50ms")
             and sh("tc qdisc del dev lo root"))
out["netem"] = sh("tc qdisc add dev lo root netem delay 1ms") and sh("tc qdisc del dev lo root")
def sock(family, kind, proto=0):
    try:
        socket.socket(family, kind, proto).close()
        return True
    except OSError:
        return False
MPTCP_ENABLED = "/proc/sys/net/mptcp/enabled"
out["mptcp"] = (os.path.exists(MPTCP_ENABLED) and open(MPTCP_ENABLED).read().strip() == "1"
                and sock(socket.AF_INET, socket.SOCK_STREAM, 262))
out["tipc"] = sock(getattr(socket, "AF_TIPC", 30), socket.SOCK_RDM)
out["sctp"] = sock(socket.AF_INET, socket.SOCK_STREAM, 132)
out["nat"] = sh("nft add table ip hprobe && "
               "nft 'add chain ip hprobe post { type nat hook postrouting priority 100; }' && "
               "nft delete table ip hprobe")
def module(name):
    if os.path.isdir(f"/sys/module/{name}"):
        return True
    return sh(f"modprobe -n {name}")
out["rdma_rxe"] = module("rdma_rxe")
out["nfsd"] = module("nfsd") or "nfsd" in open("/proc/filesystems").read()
def programs(*names):
    return all(shutil.which(n, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
               for n in names)
out["nfs"] = (out["nfsd"] and module("nfsv4")
              and programs("rpc.nfsd", "rpc.mountd", "exportfs", "mount.nfs4"))
out["glusterfs"] = ((module("fuse") or "fuse" in open("/proc/filesystems").read())
                    and programs("glusterd", "gluster", "mount.glusterfs"))
def read(path):
    try:
        return open(path).read().split()
    except OSError:
        return []
out["congestion_available"] = read("/proc/sys/net/ipv4/tcp_available_congestion_control")
out["congestion_default"] = (read("/proc/sys/net/ipv4/tcp_congestion_control") or [""])[0]
out["kernel"] = os.uname().release
out["machine"] = os.uname().machine
print(json.dumps(out))
"""


@dataclass
class Capabilities:
    node: str
    kernel: str = ""
    features: dict[str, bool] = field(default_factory=dict)
    congestion_available: list[str] = field(default_factory=list)
    congestion_default: str = ""
    tools: dict[str, str | None] = field(default_factory=dict)

    def has(self, feature: str) -> bool:
        return self.features.get(feature, False)

    def missing(self, features: set[str] | list[str]) -> list[str]:
        return sorted(f for f in features if not self.has(f))

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        lines = [f"{self.node}: kernel {self.kernel}"]
        yes = [f for f, ok in sorted(self.features.items()) if ok]
        no = [f for f, ok in sorted(self.features.items()) if not ok]
        lines.append(f"  features present: {', '.join(yes) or 'none'}")
        lines.append(f"  features missing: {', '.join(no) or 'none'}")
        lines.append(f"  congestion control: {' '.join(self.congestion_available)} "
                     f"(default {self.congestion_default})")
        known = registered()
        for tool, version in sorted(self.tools.items()):
            lines.append(f"  {tool:24s} {version or 'MISSING (' + install_hint(known.get(tool), tool) + ')'}")
        return "\n".join(lines)


#: Seconds each of the probe's two commands may take. It only catches a node that hangs: ~100
#: short processes in a TCG guest sharing two loaded cores with other guests took over 30 s.
PROBE_TIMEOUT_S = 120.0


def probe(node: Node, timeout: float = PROBE_TIMEOUT_S,
          tools: Iterable[Tool] | None = None) -> Capabilities:
    """Test ``node`` for every known feature and for ``tools`` (default: every declared tool);
    change nothing on it."""
    res = node.run(["unshare", "--net", "python3", "-c", _FEATURE_SCRIPT], timeout=timeout,
                   hint="the probe needs root, util-linux `unshare` and python3 on the node")
    data = json.loads(res.stdout.strip().splitlines()[-1])
    caps = Capabilities(
        node=node.name,
        kernel=data.pop("kernel"),
        congestion_available=data.pop("congestion_available"),
        congestion_default=data.pop("congestion_default"),
    )
    data.pop("machine", None)
    caps.features = {k: bool(v) for k, v in data.items()}
    from ..config.gpfs import gpfs_member

    caps.features["gpfs"] = gpfs_member(node)
    caps.tools = tool_versions(node, tools, timeout)
    return caps


def tool_versions(node: Node, tools: Iterable[Tool] | None = None,
                  timeout: float = PROBE_TIMEOUT_S) -> dict[str, str | None]:
    """Each tool's version on ``node`` (None: not installed), in one command."""
    wanted = {t.name: t for t in (all_tools().values() if tools is None else tools)}
    # the system folders too: an ordinary login's PATH lacks them, and servers live there
    # (globus-gridftp-server is /usr/sbin's; the harness starts it by its full path)
    extra = sorted({t.path for t in wanted.values() if t.path}) + list(SYSTEM_BIN)
    script = f'PATH="$PATH:{":".join(extra)}"; ' + "; ".join(
        f"if command -v {tool.name} >/dev/null 2>&1; then echo \"{tool.name}=$({tool.version} 2>&1 | head -n1)\";"
        f" else echo '{tool.name}='; fi"
        for tool in wanted.values()
    )
    res = node.run(script, timeout=timeout, check=False)
    versions: dict[str, str | None] = {}
    for line in res.stdout.splitlines():
        name, _, version = line.partition("=")
        if name in wanted:
            versions[name] = version.strip() or None
    return versions


def require(caps: Capabilities, features: set[str] | list[str] = (),
            tools: Iterable[Tool | str] = (), purpose: str = "this study") -> None:
    """Stop, before anything changes, if ``caps`` lacks a feature or tool."""
    missing = caps.missing(features)
    if missing:
        detail = "; ".join(f"{f} ({FEATURES[f][0]}): needs {FEATURES[f][1]}" for f in missing)
        raise CapabilityMissing(
            f"{caps.node} (kernel {caps.kernel}) cannot run {purpose}: missing {detail}",
            "run it where the kernel has these features (a VM lab or real machines "
            "from an inventory); `harness probe` lists what each node offers",
        )
    wanted = [tool if isinstance(tool, Tool) else lookup(tool) for tool in tools]
    absent = [t for t in wanted if not caps.tools.get(t.name)]
    if absent:
        raise CapabilityMissing(
            f"{caps.node} lacks the programs {', '.join(t.name for t in absent)} needed by {purpose}",
            "install them: " + "; ".join(sorted({install_hint(t, t.name) for t in absent}))
            + " (env/setup installs the Debian ones on the local machine)",
        )


def install_hint(tool: Tool | None, name: str) -> str:
    """How to get a program: apt for Debian's packages, the vendor's package otherwise."""
    if tool is None:
        return f"apt-get install {name}"
    if tool.vendor:
        return f"{tool.package} from {tool.vendor}"
    return f"apt-get install {tool.package}"
