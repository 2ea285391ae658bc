"""The per-boot directory: fresh SSH keys, the guest's init and sshd config.

Everything a guest needs that is not the host root file system lives in one
directory, created per boot with mode 0700 and exported read-only to the
guest as the 9p share ``harness`` (mounted at /run/harness):

* ``host_key`` — a fresh ed25519 SSH host key. Its public half goes into
  ``known_hosts`` (for ``[127.0.0.1]:<port>``), so the client checks the
  guest's identity strictly and never needs to auto-accept a key.
* ``user_key`` — a fresh ed25519 client key; its public half is the guest's
  only ``authorized_keys`` entry. No passwords anywhere.
* ``init`` — PID 1 of the guest (see INIT_TEMPLATE for why not virtme-ng-init).
* ``initramfs.img`` — built by virtme-ng's initramfs builder: busybox, the 9p
  and virtio modules of the guest kernel, and a script that mounts the host
  root over 9p read-only and switches to our ``init``.
* ``console.log`` — the guest serial console (boot diagnostics).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass

from ..errors import CapabilityMissing, HarnessError
from .qemu import GUEST_ADDR, GUEST_PREFIX, MANAGEMENT_MAC

GUEST_MOUNT = "/run/harness"
SSHD_READY_MARK = "harness-init: sshd starting"

SSHD_CONFIG = f"""\
# sshd of a harness VM node (generated per boot; the guest runs it as PID 1)
ListenAddress 0.0.0.0:22
HostKey {GUEST_MOUNT}/host_key
AuthorizedKeysFile {GUEST_MOUNT}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
PrintMotd no
PrintLastLog no
UseDNS no
MaxSessions 100
MaxStartups 100:30:200
Subsystem sftp internal-sftp
"""

# Why our own PID 1 and not virtme-ng-init: virtme-ng-init starts udevd and
# waits for it to settle, which loads every module the emulated hardware
# matches (kvm_amd alone took ~5 s under TCG); that was 8-16 s of a 20-30 s
# boot on this machine. A lab needs none of it: we load virtio_net ourselves
# and everything else (tipc, sctp, sch_netem, ...) is loaded on demand by
# modprobe from the shared /lib/modules. Writable state lives on tmpfs only;
# the host root stays read-only (QEMU exports it with readonly=on).
#
# Every step runs as an applet of the *static* busybox: under TCG each exec of
# a dynamically linked tool (util-linux mount, iproute2) cost ~1 s here, so
# the same script with the host's tools took 23 s instead of ~3.
INIT_TEMPLATE = r"""#!{bb} sh
# PID 1 of harness VM node {name} (generated per boot by harness.vm.guest).
BB={bb}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
say() {{ read UP _ < /proc/uptime 2>/dev/null; echo "harness-init: $* at uptime ${{UP:-?}}s"; }}
fail() {{ say "FAILED: $*"; $BB sleep 2; exit 1; }}  # PID 1 exits -> panic -> QEMU exits

# Stage 1: the initramfs mounted the host root with 9p cache=none, where every
# exec and stat is a round trip through TCG. Switch to a second export of the
# same (read-only) tree mounted with the page cache on, then re-run as stage 2.
if [ "$1" != stage2 ] && [ {cache} != none ]; then
    $BB mount -n -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache={cache} \
        rootc /mnt || fail "mount the cached root"
    cd /mnt && $BB mount -n --move . / && exec $BB chroot . $BB sh {init} stage2
    fail "switch to the cached root"
fi

$BB mount -n -t proc -o nosuid,noexec,nodev proc /proc || fail "mount /proc"
$BB mount -n -t sysfs -o nosuid,noexec,nodev sysfs /sys || fail "mount /sys"
$BB mount -n -t devtmpfs -o nosuid,mode=755 devtmpfs /dev || fail "mount /dev"
$BB mkdir -p /dev/pts /dev/shm
$BB mount -n -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=666 devpts /dev/pts
$BB mount -n -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
$BB mount -n -t tmpfs -o nosuid,nodev,mode=755 tmpfs /run || fail "mount /run"
$BB mount -n -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /tmp || fail "mount /tmp"
$BB mount -n -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /var/tmp
$BB mount -n -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup 2>/dev/null
$BB mkdir -p {mount} /run/sshd /run/lock /run/netns
$BB mount -n -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000 harness {mount} \
    || fail "mount the harness share"
$BB hostname {name}
say "file systems mounted"

# sshd (UsePAM no) refuses accounts whose password field starts with '!', and
# bash sources ~/.bashrc even for `ssh host cmd` (a host .bashrc with pyenv
# init cost seconds per command under TCG): give the guest private copies of
# /etc/shadow and /etc/passwd with root unlocked for key login and /bin/sh as
# its shell. The host's files are never written (the export is read-only).
$BB sed 's/^root:![^:]*:/root:*:/' /etc/shadow > /run/shadow \
    && $BB chmod 600 /run/shadow && $BB mount -n --bind /run/shadow /etc/shadow
$BB sed 's|^\(root:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:\).*$|\1/bin/sh|' /etc/passwd > /run/passwd \
    && $BB mount -n --bind /run/passwd /etc/passwd

# No name server is reachable from the guest (QEMU's user network is restricted), yet the
# host's resolv.conf names one: every lookup of a name not in /etc/hosts waited for DNS
# time-outs (glusterd and rpc.mountd look up the guest's own name: seconds to minutes under
# TCG). An empty resolv.conf fails at once, and /etc/hosts gains the guest's name.
echo "# harness VM {name}: no name server" > /run/resolv.conf \
    && $BB mount -n --bind /run/resolv.conf /etc/resolv.conf
{{ $BB cat /etc/hosts; echo "127.0.1.1 {name}"; }} > /run/hosts \
    && $BB mount -n --bind /run/hosts /etc/hosts

$BB modprobe virtio_net || /sbin/modprobe virtio_net || fail "modprobe virtio_net"
# a lab data disk (virtio-blk, PCI ids 1af4:1001 / 1af4:1042) needs its driver too
if $BB grep -qsx -e 0x1001 -e 0x1042 /sys/bus/pci/devices/*/device; then
    $BB modprobe virtio_blk || /sbin/modprobe virtio_blk || fail "modprobe virtio_blk"
fi
$BB ip link set lo up
IF=
for i in $($BB seq 50); do
    for d in /sys/class/net/*; do
        [ "$($BB cat $d/address 2>/dev/null)" = "{mac}" ] && {{ IF=${{d##*/}}; break; }}
    done
    [ -n "$IF" ] && break
    $BB usleep 100000
done
[ -n "$IF" ] || fail "no network interface"
$BB ip link set "$IF" up || fail "ip link set $IF up"
$BB ip addr add {addr}/{prefix} dev "$IF" || fail "ip addr add on $IF"

say "sshd starting"
exec /usr/sbin/sshd -D -e -f {mount}/sshd_config
"""


@dataclass(frozen=True)
class GuestFiles:
    dir: str
    host_key: str
    user_key: str
    known_hosts: str
    init: str
    initrd: str
    console_log: str

    def host_public_key(self) -> str:
        with open(self.host_key + ".pub") as fh:
            kind, blob = fh.read().split()[:2]
        return f"{kind} {blob}"

    def write_known_hosts(self, port: int) -> None:
        """Trust exactly this boot's host key, for exactly this loopback port."""
        with open(self.known_hosts, "w") as fh:
            fh.write(f"[127.0.0.1]:{port} {self.host_public_key()}\n")


def _keygen(path: str, comment: str) -> None:
    try:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
            check=True, capture_output=True, timeout=30,
        )
    except FileNotFoundError:
        raise CapabilityMissing(
            "ssh-keygen is not installed", "apt-get install openssh-client"
        ) from None
    except subprocess.CalledProcessError as exc:
        raise HarnessError(
            f"ssh-keygen failed for {path}: {exc.stderr.decode(errors='replace').strip()}",
            "check that the per-boot directory is writable",
        ) from None


def is_static_elf(path: str) -> bool:
    """True if ``path`` is an ELF executable without a program interpreter."""
    import struct

    with open(path, "rb") as fh:
        head = fh.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
            return False
        endian = "<" if head[5] == 1 else ">"
        phoff, = struct.unpack(endian + "Q", head[32:40])
        phentsize, phnum = struct.unpack(endian + "HH", head[54:58])
        fh.seek(phoff)
        table = fh.read(phentsize * phnum)
    for i in range(phnum):
        p_type, = struct.unpack(endian + "I", table[i * phentsize: i * phentsize + 4])
        if p_type == 3:  # PT_INTERP
            return False
    return True


def build_initramfs(kernel_version: str, out: str) -> None:
    """Run virtme-ng's initramfs builder (a dependency, used as a tool)."""
    try:
        import virtme.mkinitramfs  # noqa: F401  (only to give a clear error)
    except ImportError:
        raise CapabilityMissing(
            "virtme-ng is not installed in this Python environment",
            "pip install virtme-ng (it builds the initramfs that mounts the host root over 9p)",
        ) from None
    proc = subprocess.run(
        [sys.executable, "-m", "virtme.commands.mkinitramfs",
         "--mod-kversion", kernel_version, "--outfile", out],
        capture_output=True, timeout=120,
    )
    if proc.returncode != 0 or not os.path.getsize(out):
        raise HarnessError(
            f"building the VM initramfs for {kernel_version} failed: "
            f"{proc.stderr.decode(errors='replace').strip()[-400:]}",
            "check that busybox-static and the kernel's modules are installed",
        )


def prepare(
    boot_dir: str, name: str, kernel_version: str, root_cache: str = "loose",
    busybox: str = "/bin/busybox",
) -> GuestFiles:
    """Fill the (existing, empty, 0700) ``boot_dir`` for one boot."""
    files = GuestFiles(
        dir=boot_dir,
        host_key=os.path.join(boot_dir, "host_key"),
        user_key=os.path.join(boot_dir, "user_key"),
        known_hosts=os.path.join(boot_dir, "known_hosts"),
        init=os.path.join(boot_dir, "init"),
        initrd=os.path.join(boot_dir, "initramfs.img"),
        console_log=os.path.join(boot_dir, "console.log"),
    )
    _keygen(files.host_key, f"harness-vm-{name}-host")
    _keygen(files.user_key, f"harness-vm-{name}-user")
    with open(files.user_key + ".pub") as src, open(
        os.path.join(boot_dir, "authorized_keys"), "w"
    ) as dst:
        dst.write(src.read())
    with open(os.path.join(boot_dir, "sshd_config"), "w") as fh:
        fh.write(SSHD_CONFIG)
    with open(files.init, "w") as fh:
        fh.write(
            INIT_TEMPLATE.format(
                name=shlex.quote(name), mount=GUEST_MOUNT, addr=GUEST_ADDR, prefix=GUEST_PREFIX,
                mac=MANAGEMENT_MAC,
                cache=root_cache, init=files.init, bb=busybox,
            )
        )
    os.chmod(files.init, 0o755)
    build_initramfs(kernel_version, files.initrd)
    return files


def kernel_append(files: GuestFiles) -> str:
    """The guest kernel command line.

    ``init=`` names our init inside the host root (the boot dir is on the host
    file system, which the initramfs mounts as the guest's /). The initramfs
    builder's script takes ``init=`` from the command line and switches to it.
    ``mitigations=off`` because the guest is a throw-away lab and speculation
    barriers are expensive under TCG.
    """
    parts = [
        "console=ttyS0", "panic=-1", "quiet", "loglevel=4",
        "mitigations=off", "tsc=reliable", f"init={files.init}",
    ]
    return " ".join(parts)
