"""S2's file systems: the server's disks, NFS and the parallel file system, and fio over them.

Everything here goes through recorded operations (:mod:`harness.config.labdisk`,
:mod:`harness.config.nfs`, :mod:`harness.config.glusterfs`) and journaled
processes, so it is undone after the run, an error or Ctrl-C. Files the run
writes live only on the lab's own disks (formatted fresh by this run, gone with
the VM), or on the client's mounts of them.

Why GlusterFS plays GPFS: of the parallel/cluster file systems Debian packages,
it is the one that, like GPFS, serves a POSIX file system from servers' local
disks to clients over TCP with a client of its own (FUSE here, GPFS's mmfsd
there) and its own network and caching layer in between, and that a single
server can run (the paper's testbed 1 had one GPFS server, an X4500); CephFS
needs monitors and OSD daemons that do not fit two emulated CPUs, and OrangeFS /
Lustre / BeeGFS are not in Debian 12.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager

from ...config.kmod import KernelModules
from ...config.labdisk import LabDiskFs
from ...config.route import HostRoute
from ...errors import CapabilityMissing, HarnessError
from ...nodes import Node
from ...run.session import Session
from ...tools import fio as fio_tool

ROOT = "/run/s2"
DISKS = {"nfs": "nfs", "pfs": "pfs"}  # file system -> the server disk it lives on
VOLUME = "s2vol"
#: the parallel FS's second volume, on the server's uncapped disk: what the file system itself
#: can do in this lab (:data:`harness.studies.s2.design.FREE_DISK`)
FREE_VOLUME = "s2free"
FREE_DISK = "pfs-free"


def free_disk_dir() -> str:
    return f"{ROOT}/disk-{FREE_DISK}"


def disk_dir(fs: str) -> str:
    return f"{ROOT}/disk-{DISKS[fs]}"


def tools(file_systems) -> tuple:
    from ...config import glusterfs, nfs

    out = [fio_tool.FIO]
    if "nfs" in file_systems:
        out += [nfs.RPC_NFSD, nfs.RPC_MOUNTD, nfs.EXPORTFS, nfs.MOUNT_NFS4]
    if "pfs" in file_systems:
        out += [glusterfs.GLUSTERD, glusterfs.GLUSTER, glusterfs.MOUNT_GLUSTERFS]
    return tuple(out)


def serve(session: Session, bed, file_systems, addresses: dict) -> dict[str, dict]:
    """Format and mount both server disks (recorded); serve NFS from one and the parallel file
    system from the other. Returns, per file system, where its disk and export are."""
    from ...config import glusterfs, nfs

    server = bed.node("server")
    session.apply(*(LabDiskFs(server, f"harness-{DISKS[fs]}", disk_dir(fs))
                    for fs in file_systems),
                  *((LabDiskFs(server, f"harness-{FREE_DISK}", free_disk_dir()),)
                    if "pfs" in file_systems else ()))
    out: dict[str, dict] = {}
    if session.dry_run:
        return {fs: {"disk_dir": disk_dir(fs)} for fs in file_systems}
    for fs in file_systems:  # the run's own directories on its own fresh disks (the brick
        # directory is glusterd's to make)
        made = "raw data" if fs == "nfs" else "raw"
        server.run(" && ".join(f"mkdir -p {shlex.quote(disk_dir(fs) + '/' + d)}"
                               for d in made.split()), timeout=30)
        out[fs] = {"disk_dir": f"{disk_dir(fs)}/raw",
                   "data_dir": f"{disk_dir(fs)}/{'data' if fs == 'nfs' else 'brick'}"}
    clients = [addresses[("client", path)].split("/")[0] for path in ("lan", "wan")]
    if "nfs" in file_systems:
        # the client's NFS modules once for the run: each mount's scope would load them and
        # its undo unload them again (three times a run)
        session.apply(KernelModules(bed.node("client"), nfs.NfsMount.modules, nfs.CLIENT_HINT))
        session.apply(nfs.NfsServer(server))
        # fsid=0: the export is the NFSv4 root itself, so clients need no pseudo file system
        # walked down from / -- which in a lab VM is the host's root over 9p, not exportable
        session.apply(*(nfs.NfsExport(server, out["nfs"]["data_dir"], client,
                                      ("rw", "sync", "no_subtree_check", "no_root_squash",
                                       "fsid=0"))
                        for client in clients))
        out["nfs"]["export"] = "/"
    if "pfs" in file_systems:
        session.apply(glusterfs.GlusterDaemon(server))
        brick_host = addresses[("server", "lan")].split("/")[0]
        session.apply(glusterfs.GlusterVolume(server, VOLUME,
                                              ((brick_host, out["pfs"]["data_dir"]),)))
        out["pfs"]["volume"] = VOLUME
        out["pfs"]["brick_host"] = brick_host  # where every client's data goes (see mounted)
        # the same file system on the uncapped disk (its brick beside the other's host)
        session.apply(glusterfs.GlusterVolume(server, FREE_VOLUME,
                                              ((brick_host, f"{free_disk_dir()}/brick"),)))
        out["pfs"]["free_volume"] = FREE_VOLUME
    return out


# -- machines from an inventory: the user's own file systems ----------------------------------

def check_existing(client: Node, server: Node, params) -> None:
    """Before anything changes: the client can mount NFS, the parallel file system is
    mounted there and writable, the server's disk directory exists."""
    checks = []
    if "nfs" in params.measured_file_systems():
        checks.append((client, "command -v mount.nfs4 >/dev/null",
                       "cannot mount NFS v4 (no mount.nfs4)",
                       "install nfs-common on it (apt-get install nfs-common)"))
    if "pfs" in params.measured_file_systems():
        path = shlex.quote(params.pfs_mount)
        checks.append((client, f"test -d {path} && test -w {path}",
                       f"has no writable directory {params.pfs_mount} (pfs_mount)",
                       "give the directory where your parallel file system is mounted "
                       "(mmlsmount all -L shows GPFS's), writable by the inventory's user"))
        checks.append((client, f"test \"$(findmnt -n -o TARGET -T {path})\" != /",
                       f"has no file system mounted at or above {params.pfs_mount} "
                       "(it is on the root file system)",
                       "mount your parallel file system first (GPFS: mmmount), or give its "
                       "mount point"))
    if params.server_disk_dir:
        checks.append((server, f"test -d {shlex.quote(params.server_disk_dir)}",
                       f"has no directory {params.server_disk_dir} (server_disk_dir)",
                       "give a directory on the server's local disk, under the NFS export"))
    for node, command, problem, fix in checks:
        if not node.run(command, check=False, timeout=30).ok:
            raise CapabilityMissing(f"{node.name} {problem}", fix)


def existing(session: Session, server: Node, params) -> dict[str, dict]:
    """The user's file systems, as :func:`serve` describes a lab's: nothing is served; the
    raw-disk fio writes in a directory of the run's own under ``server_disk_dir``.

    Files are written only in directories the run makes (named after the run) and removes:
    fio's files are cleared after each point (``clear``), the directories at the end.
    """
    out: dict[str, dict] = {}
    for fs in params.measured_file_systems():
        out[fs] = {"existing": True, "clear": True}
    if "nfs" in out:
        out["nfs"]["export"] = params.nfs_export
        if params.server_disk_dir:
            out["nfs"]["disk_dir"] = own_directory(session, server, params.server_disk_dir)
    if "pfs" in out:
        out["pfs"]["mount"] = params.pfs_mount
    return out


def own_directory(session: Session, node: Node, parent: str) -> str:
    """A new directory of this run's own under ``parent`` on ``node``, removed at the end of
    the journal's current scope.

    Made before it is recorded, with a plain ``mkdir`` that fails if the name exists: the
    undo (``rm -rf``) can only ever remove a directory this run made. (A kill between the
    two leaves an empty directory, never a removal of the user's files.)"""
    path = f"{parent.rstrip('/')}/harness-{session.run.run_id}" if not session.dry_run \
        else f"{parent.rstrip('/')}/harness-RUN"
    if session.dry_run:
        return path
    made = node.run(["mkdir", "-m", "0700", path], check=False, timeout=30)
    if not made.ok:
        raise HarnessError(f"cannot make the run's directory {path} on {node.name}: "
                           f"{(made.stderr or made.stdout).strip()[-200:]}",
                           "check the directory is writable by the inventory's user")
    session.journal.record("file", node, path=path)
    return path


@contextmanager
def mounted(session: Session, client: Node, fs: str, server_ip: str,
            conf: dict, volume: str = "") -> Iterator[str]:
    """The file system ``fs`` mounted on ``client`` from ``server_ip`` for the block; a
    user's (``existing``): their export mounted, or their parallel file system as it is,
    and a directory of the run's own in it. ``volume``: the parallel FS's volume to mount
    (default: ``conf["volume"]``, the one on its capped disk)."""
    from ...config import glusterfs, nfs

    mountpoint = f"/run/s2-{volume or fs}-{server_ip.replace('.', '-')}"
    with session.journal.scope():
        if conf.get("existing"):
            if fs == "nfs":
                session.apply(nfs.NfsMount(client, server_ip, conf["export"], mountpoint))
            yield own_directory(session, client, mountpoint if fs == "nfs" else conf["mount"])
            return
        if fs == "nfs":
            session.apply(nfs.NfsMount(client, server_ip, conf["export"], mountpoint))
        else:
            brick = conf.get("brick_host")
            if brick and brick != server_ip:
                # the client moves data to the brick's address, not the one it mounted
                # from: through the server's address on this path, or it would not cross it
                # (with the WAN's scaled minimum RTO, as the peer's own route has it)
                session.apply(HostRoute(client, brick, server_ip,
                                        rto_min_ms=conf.get("rto_min_ms", 0)))
            # the FUSE client logs under /var/log/glusterfs, read-only in a lab VM: to
            # /dev/null instead, so the mount creates no file that would outlive it
            session.apply(glusterfs.GlusterMount(client, server_ip, volume or conf["volume"],
                                                 mountpoint,
                                                 ("log-file=/dev/null",)))
        yield mountpoint


def drop_caches(nodes) -> None:
    """Write dirty pages and drop the page caches, so the next read comes from the disk.

    Nothing to restore: the caches refill as files are read."""
    for node in nodes:
        node.run("sync && echo 3 > /proc/sys/vm/drop_caches", timeout=120)


def fio(session: Session, node: Node, directory: str, rw: str, numjobs: int, block: int,
        file_bytes: int, name: str, cold: bool, others, clear: bool = False,
        interfaces: dict[str, str] | None = None, write_only: bool = False) -> dict:
    """One fio point on ``node`` in ``directory``: ``numjobs`` tasks each writing or reading
    its own ``file_bytes`` file sequentially in ``block``-byte requests; its JSON archived.
    ``cold``: the page caches of ``node`` and ``others`` are dropped first. ``clear``: after
    a read (``write_only``: after the write, no read follows), the point's files are removed
    (a user's file system; the lab's disks are the run's own and sized to keep them).
    ``interfaces`` (path -> device on ``node``): the bytes each sent and received during the
    point (``PATH_tx_bytes``, ``PATH_rx_bytes``) and ``node``'s CPU busy share over the
    point (``client_busy_pct``, of all its CPUs, from /proc/stat), read in the same command
    as fio, so that where the data went and what the machine did are measured, not
    assumed."""
    if cold:
        drop_caches((node, *others))
    job = fio_tool.FioJob(name=name.replace(".", "_"), directory=directory, rw=rw,
                          block_size=block, size=file_bytes, numjobs=numjobs,
                          direct=False, end_fsync=rw == "write")
    command = shlex.join(job.argv())
    if interfaces:
        counters = f"{{ {counters_command(tuple(interfaces.values()))}; {CPU_COMMAND}; }}"
        command = f"{counters} >&2; {command}; s=$?; {counters} >&2; exit $s"
    res = node.run(command, timeout=600 + file_bytes * numjobs / 1e5,
                   check=False, track=True)
    session.raw(f"fio-{name}-{rw}.json", res.stdout)
    if not res.ok:
        raise HarnessError(f"fio {rw} on {node.name} in {directory} failed (exit "
                           f"{res.exit_status}): {(res.stderr or res.stdout).strip()[-300:]}")
    if clear and (rw == "read" or write_only):
        node.run(["find", directory, "-maxdepth", "1", "-type", "f", "-name",
                  f"{job.name}.*", "-delete"], timeout=120)
    results = fio_tool.parse_fio_json(res.stdout)
    total = sum(r.bytes for r in results)
    seconds = max(r.runtime_s for r in results)
    row = {"mbyte_s": total / seconds / 1e6 if seconds else float("nan"),
           "seconds": seconds, "bytes": total, "process_s": res.duration}
    if interfaces:
        row.update(counter_deltas(tuple(interfaces), res.stderr))
        busy = busy_pct(res.stderr)
        if busy is not None:
            row["client_busy_pct"] = busy
    return row


CPU = "@cpu"
#: Shell: one line ``@cpu user nice system idle iowait irq softirq steal ...`` (all CPUs)
CPU_COMMAND = f"echo {CPU} $(sed -n 's/^cpu  *//p' /proc/stat)"


def busy_pct(text: str) -> float | None:
    """The share of all CPUs' time that was busy (not idle, not waiting for I/O) between the
    first and the last ``@cpu`` line of ``text``, percent; None without two such lines or
    without time between them. (A guest without paravirtual steal time counts the time its
    vCPU thread waited on the host as whatever it was running.)"""
    lines = tagged_lines(text, CPU)
    if len(lines) < 2 or any(len(words) < 5 or not all(w.isdigit() for w in words)
                             for words in (lines[0], lines[-1])):
        return None
    before, after = [int(w) for w in lines[0]], [int(w) for w in lines[-1]]
    width = min(len(before), len(after), 8)  # user .. steal; guest times are inside user
    delta = [a - b for a, b in zip(after[:width], before[:width])]
    total = sum(delta)
    if total <= 0:
        return None
    return 100.0 * (total - delta[3] - delta[4]) / total


def laid_out_file(name: str, task: int = 0) -> str:
    """The file :func:`fio` lays out for task ``task`` of the point ``name`` in its
    directory: fio's ``JOBNAME.TASK.0`` (one file per task, with or without
    group_reporting), the job named as :func:`fio` names it."""
    return f"{name.replace('.', '_')}.{task}.0"


#: bytes a seek-cost read asks for: 4 KiB, the page and file-system block size, so a
#: random read costs a seek far more than a transfer (a rotating disk: milliseconds a seek, tens
#: of microseconds a 4 KiB block at 100 MB/s)
SEEK_BLOCK = 4096
#: seconds each of the seek cost's two reads runs: thousands of reads on a local disk, and
#: still hundreds on a lab disk throttled to a few MB/s (4 KiB at 2.5 MB/s: ~600 a second),
#: so the mean latency is not a handful of samples; 2 x 3 s beside a repetition of minutes
SEEK_RUN_S = 3.0


def seek_cost(session: Session, node: Node, directory: str, file_name: str, name: str,
              file_bytes: int, cold: bool = True) -> dict:
    """The disk's seek cost on ``node``: 4 KiB O_DIRECT reads of the existing file
    ``directory``/``file_name`` (``file_bytes`` long: a disk write point's, not yet
    cleared), sequential then at random offsets, each for ``SEEK_RUN_S``; both JSONs
    archived (``fio-NAME-seek-read.json``, ``fio-NAME-seek-randread.json``).

    Returns fio's mean completion latency of each, ``seq_clat_ms`` and ``rand_clat_ms``,
    and ``seek_ms``: the random read's over the sequential, what moving to a random place
    on the disk adds to a read (a disk that does not seek: about 0). O_DIRECT bypasses the
    page cache, and ``cold`` drops it first besides, so every read reaches the disk;
    ``filename=`` reads the file as it is (fio lays out only a missing or short file)."""
    if cold:
        drop_caches((node,))
    clat = {}
    for rw in ("read", "randread"):
        job = fio_tool.FioJob(name=f"{name.replace('.', '_')}-seek-{rw}", rw=rw,
                              filename=f"{directory.rstrip('/')}/{file_name}",
                              block_size=SEEK_BLOCK, size=file_bytes, direct=True,
                              runtime_s=SEEK_RUN_S)
        res = node.run(job.argv(), timeout=SEEK_RUN_S + 300, check=False, track=True)
        session.raw(f"fio-{name}-seek-{rw}.json", res.stdout)
        if not res.ok:
            raise HarnessError(f"fio's 4 KiB O_DIRECT {rw} of {directory}/{file_name} on "
                               f"{node.name} failed (exit {res.exit_status}): "
                               f"{(res.stderr or res.stdout).strip()[-300:]}",
                               "the disk's seek cost needs O_DIRECT reads (tmpfs has none): "
                               "give a directory on the server's local disk")
        (result,) = fio_tool.parse_fio_json(res.stdout)
        if result.clat_mean_us is None:
            raise HarnessError(f"fio's {rw} of {directory}/{file_name} on {node.name} "
                               "reported no completion latency")
        clat[rw] = result.clat_mean_us / 1000.0
    return {"seq_clat_ms": clat["read"], "rand_clat_ms": clat["randread"],
            "seek_ms": clat["randread"] - clat["read"]}


COUNTERS = "@net"


def tagged_lines(text: str, tag: str) -> list[list[str]]:
    """The words after ``tag`` of each line of ``text`` that starts with it (the lines a
    point's command printed before and after fio: ``@net``, ``@cpu``)."""
    return [line.split()[1:] for line in text.splitlines() if line.startswith(tag + " ")]


def counters_command(devices: tuple[str, ...]) -> str:
    """Shell: one line ``@net TX RX TX RX ...``, each device's byte counters in order."""
    files = " ".join(shlex.quote(f"/sys/class/net/{dev}/statistics/{what}_bytes")
                     for dev in devices for what in ("tx", "rx"))
    return f'echo {COUNTERS} $(cat {files})'


def counter_deltas(paths: tuple[str, ...], text: str) -> dict[str, int]:
    """The bytes sent and received per path between the first and the last ``@net`` line of
    ``text`` (:func:`counters_command` before and after the point); none if either is
    missing or short (a device gone: the point has no traffic figures)."""
    lines = tagged_lines(text, COUNTERS)
    if len(lines) < 2 or any(len(words) != 2 * len(paths) or not all(w.isdigit() for w in words)
                             for words in (lines[0], lines[-1])):
        return {}
    before, after = [int(w) for w in lines[0]], [int(w) for w in lines[-1]]
    out = {}
    for i, path in enumerate(paths):
        out[f"{path}_tx_bytes"] = after[2 * i] - before[2 * i]
        out[f"{path}_rx_bytes"] = after[2 * i + 1] - before[2 * i + 1]
    return out
