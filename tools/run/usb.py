"""Write the boot image to a USB stick: `make usb DEV=/dev/sdX`.

    python3 -m tools.run.usb <image> <device>

Before anything is written, the device must be a whole disk (not a
partition) that is removable or on a USB bus, with nothing of it in use:
no mounted filesystem, no swap, no LVM, RAID or encrypted volume on it, and
not the disk holding / or /boot. It must be writable and large enough for
the image. Each failed check is refused with its reason and what to do.
Then it shows the disk (vendor, model, size, partitions and their labels)
and asks for `yes`; with YES=1 it does not ask, and without YES=1 it will
not write from a stdin that is not a terminal. It writes through O_SYNC in
blocks, showing progress, syncs, drops the kernel's cached copy of the
disk, reads the written length back and compares its SHA-256 with the
image's. Exit status: 0 written and verified, 1 refused or failed, 2 usage.
Needs root to open the device. Python 3.11 standard library only.

Test mode (tests/usb/test_usb.py), only with SHOOTDOWN_USB_SYSROOT set:
  SHOOTDOWN_USB_SYSROOT=<dir>  read <dir>/sys, <dir>/proc and <dir>/dev/disk
                               instead of /sys, /proc and /dev/disk, and take
                               a regular file as the device (its name picks
                               <dir>/sys/class/block/<name>)
  SHOOTDOWN_USB_EUID=<n>       the effective user ID to check (default 0)
  SHOOTDOWN_USB_CORRUPT=<n>    after the write, flip the byte at offset n on
                               the "device", as a failing stick would
Without SHOOTDOWN_USB_SYSROOT the other two are ignored.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import stat
import sys
from pathlib import Path

BLOCK = 1 << 20          # bytes per write: progress every MiB
SECTOR = 512             # sysfs `size` counts 512-byte sectors, whatever the disk's own
BLKFLSBUF = 0x1261       # _IO(0x12, 97): flush and drop the block device's buffer cache
SYSTEM_MOUNTS = ("/", "/boot", "/boot/efi", "/usr", "/var")


class Refusal(Exception):
    """A reason not to write (or a failure while writing): the message says
    what is wrong and what to do."""


class Host:
    """Where facts about disks come from: the real /sys, /proc and /dev, or
    a fake tree in test mode."""

    def __init__(self, environ: dict[str, str]) -> None:
        sysroot = environ.get("SHOOTDOWN_USB_SYSROOT", "")
        self.test_mode = bool(sysroot)
        root = Path(sysroot) if sysroot else Path("/")
        self.sys = root / "sys"
        self.proc = root / "proc"
        self.by_label = root / "dev" / "disk" / "by-label"
        self.euid = int(environ.get("SHOOTDOWN_USB_EUID", "0")) if self.test_mode \
            else os.geteuid()
        corrupt = environ.get("SHOOTDOWN_USB_CORRUPT", "") if self.test_mode else ""
        self.corrupt_at = int(corrupt) if corrupt else None

    def block(self, name: str) -> Path:
        return self.sys / "class" / "block" / name

    def name_of_devno(self, devno: int) -> str:
        """The kernel's name for a block device number ("" if unknown)."""
        link = self.sys / "dev" / "block" / f"{os.major(devno)}:{os.minor(devno)}"
        return link.resolve().name if link.exists() else ""


def read_attr(path: Path, default: str = "") -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default


def unescape(text: str) -> str:
    """/proc/mounts writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


class Disk:
    """A whole disk in sysfs and the partitions on it."""

    def __init__(self, host: Host, name: str) -> None:
        self.host, self.name = host, name
        self.dir = host.block(name).resolve()
        self.partitions = sorted(p.name for p in self.dir.iterdir()
                                 if (p / "partition").is_file())

    @property
    def names(self) -> list[str]:
        return [self.name, *self.partitions]

    def attr(self, name: str, part: str = "") -> str:
        return read_attr((self.dir / part if part else self.dir) / name)

    def size(self, part: str = "") -> int:
        return int(self.attr("size", part) or 0) * SECTOR

    def on_usb(self) -> bool:
        return "/usb" in str(self.dir)

    def removable(self) -> bool:
        return self.attr("removable") == "1"

    def label(self, part: str) -> str:
        """The filesystem label udev saw on a partition ("" if none)."""
        try:
            links = list(self.host.by_label.iterdir())
        except OSError:
            return ""
        for link in links:
            if link.resolve().name == part:
                return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)),
                              link.name)
        return ""

    def description(self) -> str:
        who = " ".join(w for w in (read_attr(self.dir / "device" / "vendor"),
                                   read_attr(self.dir / "device" / "model")) if w)
        where = ["USB"] if self.on_usb() else []
        where += ["removable"] if self.removable() else []
        lines = [f"/dev/{self.name}: {who or 'unknown model'}, {gb(self.size())} "
                 f"({', '.join(where)})"]
        for part in self.partitions:
            label = self.label(part)
            lines.append(f"  /dev/{part}: {gb(self.size(part))}"
                         + (f', label "{label}"' if label else ""))
        if not self.partitions:
            lines.append("  no partitions")
        return "\n".join(lines)


def gb(size: int) -> str:
    """Decimal gigabytes, as sticks are sold."""
    return f"{size / 1e9:.1f} GB" if size >= 10**8 else f"{size / 1e6:.1f} MB"


def base_disks(host: Host, name: str, seen: set[str] | None = None) -> set[str]:
    """The whole disks a block device lives on: a partition's disk, and for
    a device-mapper or RAID device the disks under its slaves."""
    seen = seen if seen is not None else set()
    if not name or name in seen:
        return set()
    seen.add(name)
    path = host.block(name).resolve()
    if (path / "partition").is_file():
        return {path.parent.name}
    slaves = [s.name for s in (path / "slaves").glob("*")]
    if slaves:
        return set().union(*(base_disks(host, s, seen) for s in slaves))
    return {name}


def source_names(host: Host, source: str) -> set[str]:
    """The block device names a mount or swap source may be: its own name,
    and where it exists here, what its path resolves to (by-uuid links,
    /dev/mapper)."""
    if not source.startswith("/"):
        return set()
    names = {Path(source).name}
    if not host.test_mode and os.path.exists(source):
        names.add(Path(source).resolve().name)
    return names


def check_device(host: Host, dev: str, image_size: int) -> Disk:
    """Every check before writing; the disk, or a Refusal saying why not."""
    disk = whole_removable_disk(host, dev)
    check_unused(host, disk, dev)
    size = disk.size()
    if size == 0:
        raise Refusal(f"{dev}: no medium (size 0); insert the card or stick and try again")
    if size < image_size:
        raise Refusal(f"{dev}: too small: {gb(size)}, and the image needs {gb(image_size)}")
    if disk.attr("ro") == "1":
        raise Refusal(f"{dev}: read-only (a write-protect switch on the stick or card?); "
                      "make it writable and try again")
    return disk


def whole_removable_disk(host: Host, dev: str) -> Disk:
    """The disk `dev` names, if it is a whole one, removable or on USB."""
    try:
        st = os.stat(dev)
    except FileNotFoundError:
        raise Refusal(f"{dev}: no such device; give the whole disk's path, e.g. /dev/sdb "
                      "(lsblk lists the disks)") from None
    except OSError as e:
        raise Refusal(f"{dev}: cannot look at it ({e.strerror})") from None
    if stat.S_ISBLK(st.st_mode):
        name = host.name_of_devno(st.st_rdev) or Path(dev).resolve().name
    elif host.test_mode and stat.S_ISREG(st.st_mode):
        name = Path(dev).name
    else:
        raise Refusal(f"{dev}: not a block device; give the disk's device node, "
                      "e.g. /dev/sdb (lsblk lists the disks)")
    sysdir = host.block(name)
    if not sysdir.exists():
        raise Refusal(f"{dev}: the kernel lists no block device {name!r} in "
                      f"{host.sys}/class/block")

    if (sysdir / "partition").is_file():
        disk = sysdir.resolve().parent.name
        raise Refusal(f"{dev}: a partition (number {read_attr(sysdir / 'partition')}) of "
                      f"/dev/{disk}; the image carries its own partition table: write to "
                      f"the whole disk, make usb DEV=/dev/{disk}")
    disk = Disk(host, name)
    if not disk.removable() and not disk.on_usb():
        raise Refusal(f"{dev}: neither removable nor on a USB bus, so a fixed disk (built "
                      "in, or virtual); this writes only to USB sticks and removable media "
                      "(lsblk -o NAME,TRAN,RM,SIZE,MODEL shows which is which)")
    return disk


def check_unused(host: Host, disk: Disk, dev: str) -> None:
    """Nothing on the disk mounted, swapped to or held by device-mapper or
    RAID, and not the disk the system runs from."""
    mounts = [line.split() for line in read_attr(host.proc / "mounts").splitlines()]
    for fields in mounts:
        if len(fields) < 2:
            continue
        source, target = unescape(fields[0]), unescape(fields[1])
        hit = source_names(host, source) & set(disk.names)
        if not hit:
            continue
        if target in SYSTEM_MOUNTS:
            raise Refusal(f"{dev}: holds {target} ({source} is mounted there): this is the "
                          "disk the system runs from; never write to it")
        raise Refusal(f"{dev}: {source} is mounted on {target}; unmount it first "
                      f"(umount {target}), then run this again")
    # A system filesystem may be mounted from /dev/root or through LVM or
    # RAID: the device number under the mount point names its disks.
    for target in SYSTEM_MOUNTS:
        try:
            devno = os.stat(target).st_dev
        except OSError:
            continue
        if disk.name in base_disks(host, host.name_of_devno(devno)):
            raise Refusal(f"{dev}: holds {target}: this is the disk the system runs from; "
                          "never write to it")

    swaps = read_attr(host.proc / "swaps").splitlines()[1:]  # below the header line
    for line in swaps:
        fields = line.split()
        if not fields:
            continue
        source = unescape(fields[0])
        names = source_names(host, source)
        if len(fields) > 1 and fields[1] == "file" and not host.test_mode:
            try:
                names |= base_disks(host, host.name_of_devno(os.stat(source).st_dev))
            except OSError:
                pass
        if names & set(disk.names):
            raise Refusal(f"{dev}: {source} on it is in use as swap; turn it off first "
                          f"(swapoff {source}), then run this again")

    for part in disk.names:
        part_dir = disk.dir if part == disk.name else disk.dir / part
        holders = sorted(h.name for h in part_dir.glob("holders/*"))
        if holders:
            shown = ", ".join(
                h + (f" ({n})" if (n := read_attr(host.block(h) / "dm" / "name")) else "")
                for h in holders)
            raise Refusal(f"{dev}: /dev/{part} is in use by {shown}: an LVM volume, RAID "
                          "array or encrypted volume is on it; deactivate it first "
                          "(vgchange -an, mdadm --stop, cryptsetup close)")


def confirm(dev: str, environ: dict[str, str]) -> None:
    """`yes` typed on a terminal, or YES=1; anything else is a Refusal."""
    if environ.get("YES", "") == "1":
        print(f"YES=1: writing {dev} without asking")
        return
    if not sys.stdin.isatty():
        raise Refusal("stdin is not a terminal, so nobody can confirm: run it from a "
                      "terminal, or set YES=1 to write without asking")
    print(f"Everything on {dev} will be lost. Type yes to write: ", end="", flush=True)
    answer = sys.stdin.readline().strip()
    if answer != "yes":
        raise Refusal(f"answer {answer!r}, not 'yes': nothing written")


def progress(done: int, total: int, last: bool = False) -> None:
    if sys.stdout.isatty():
        print(f"\r  written {done >> 20} of {total >> 20} MiB ({100 * done // total}%)",
              end="\n" if last else "", flush=True)
    elif last:
        print(f"  written {done} bytes")


def write_image(host: Host, image: Path, dev: str, size: int, block_device: bool) -> None:
    """Write through O_SYNC (each block is on the device before the next),
    then fsync and sync. O_EXCL on a block device makes the kernel refuse it
    if anything (a mount, swap, device-mapper) holds it now."""
    flags = os.O_WRONLY | os.O_SYNC | os.O_CLOEXEC | (os.O_EXCL if block_device else 0)
    try:
        fd = os.open(dev, flags)
    except OSError as e:
        if e.errno == errno.EBUSY:
            raise Refusal(f"{dev}: busy: the kernel refuses exclusive use (something "
                          "mounted or opened it just now); nothing written") from None
        raise Refusal(f"{dev}: cannot open it for writing ({e.strerror})") from None
    try:
        with open(image, "rb") as src:
            done = 0
            while chunk := src.read(BLOCK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                done += len(chunk)
                progress(done, size, done == size)
        if done != size:
            raise Refusal(f"{image}: changed while it was written ({done} of {size} bytes)")
        os.fsync(fd)
    except OSError as e:
        raise Refusal(f"{dev}: write failed ({e.strerror}); the stick may be faulty") from None
    finally:
        os.close(fd)
    os.sync()
    if host.corrupt_at is not None:
        with open(dev, "r+b") as f:  # test mode: a stick that lost a bit
            f.seek(host.corrupt_at)
            byte = f.read(1)[0]
            f.seek(host.corrupt_at)
            f.write(bytes([byte ^ 0xFF]))


def read_back(dev: str, size: int, block_device: bool) -> str:
    """SHA-256 of the device's first `size` bytes, read from the device
    itself: the buffer cache is dropped first (BLKFLSBUF on a block device,
    POSIX_FADV_DONTNEED on a file)."""
    digest = hashlib.sha256()
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise Refusal(f"{dev}: cannot open it to verify ({e.strerror})") from None
    try:
        if block_device:
            try:
                fcntl.ioctl(fd, BLKFLSBUF)
            except OSError:
                pass  # the read-back may then come from the cache; it still compares
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        left = size
        while left:
            chunk = os.read(fd, min(BLOCK, left))
            if not chunk:
                raise Refusal(f"{dev}: ends after {size - left} bytes, before the image does")
            digest.update(chunk)
            left -= len(chunk)
    except OSError as e:
        raise Refusal(f"{dev}: read-back failed ({e.strerror}); the stick may be faulty") \
            from None
    finally:
        os.close(fd)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def usage() -> int:
    print("usage: make usb DEV=/dev/sdX   (or tools/run/usb.py <image> <device>)\n"
          "  writes the boot image to the whole USB stick or removable disk DEV, after\n"
          "  checking that it is one and that nothing on it is in use, and verifies it;\n"
          "  lsblk -o NAME,TRAN,RM,SIZE,MODEL lists the disks. YES=1: do not ask.",
          file=sys.stderr)
    return 2


def main(argv: list[str], environ: dict[str, str]) -> int:
    if len(argv) != 3 or not argv[2].strip():
        return usage()
    image, dev = Path(argv[1]), argv[2].strip()
    host = Host(environ)
    writing = False
    try:
        if not image.is_file() or image.stat().st_size == 0:
            raise Refusal(f"no image at {image}: build it first with make iso")
        size = image.stat().st_size
        disk = check_device(host, dev, size)
        if host.euid != 0:
            raise Refusal(f"writing {dev} needs root: run it with sudo, e.g. "
                          f"sudo make usb DEV={dev} (make iso first, as yourself)")
        print(disk.description())
        print(f"image: {image}, {gb(size)}")
        confirm(dev, environ)
        block_device = stat.S_ISBLK(os.stat(dev).st_mode)
        writing = True
        write_image(host, image, dev, size, block_device)
        print("  synced; reading it back")
        want, got = file_digest(image), read_back(dev, size, block_device)
        if want != got:
            raise Refusal(f"VERIFY FAILED: {dev} reads back differently from the image "
                          f"(sha256 {got}, the image's {want}); the stick may be faulty "
                          "or smaller than it claims: try another one")
    except Refusal as e:
        print(f"usb: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nusb: interrupted; " + ("the stick may hold a partial image" if writing
                                        else "nothing written"), file=sys.stderr)
        return 1
    print(f"verified: {dev} holds the image ({size} bytes, sha256 {want}); "
          "it can be removed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv, dict(os.environ)))
