#!/usr/bin/env python3
"""The USB stick writer (tools/run/usb.py) in its test mode: fake sysfs and
/proc trees (SHOOTDOWN_USB_SYSROOT) describe the disks, and a regular file
stands for the stick. Every refusal must name its reason and leave the
"stick" untouched; a confirmed write must leave the image on it and say
"verified"; a stick that flips a byte after the write must fail the
verify. Outside test mode a regular file is refused, and `make usb`
without DEV prints the usage. Last, MEDIA=usb in tools/run/boot.py: QEMU gets
the stick as its only boot device (no CD-ROM), and a bad MEDIA is refused.

Prints KTAP, one result per case, as the host test binaries do
(tools/test/run_tests.py runs it as host/usb). Python 3.11 standard library.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import ROOT
from tools.run import boot
from tools.test.ktap import Cases


IMAGE_SIZE = 3 * (1 << 20) + 4321  # not a whole number of the writer's blocks
STICK_SECTORS = 16 * 2048          # 16 MiB
# Where a USB stick and a SATA disk sit in sysfs (the writer looks for /usb).
USB_SCSI = "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0"
SATA_SCSI = "devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0"


class FakeHost:
    """A sysfs, /proc and /dev tree under one directory, with a file as
    each disk's device node."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for sub in ("sys/class/block", "sys/dev/block", "proc", "dev/disk/by-label"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        self.mounts([])
        self.swaps([])

    def disk(self, name: str, scsi: str = USB_SCSI, removable: int = 1,
             sectors: int = STICK_SECTORS, ro: int = 0, partitions: int = 1,
             vendor: str = "SanDisk", model: str = "Cruzer Blade") -> Path:
        """A whole disk and its partitions; returns its device node."""
        device = self.root / "sys" / scsi
        device.mkdir(parents=True, exist_ok=True)
        (device / "vendor").write_text(f"{vendor:<8}\n")
        (device / "model").write_text(f"{model:<16}\n")
        block = device / "block" / name
        block.mkdir(parents=True)
        (block / "device").symlink_to(os.path.relpath(device, block))
        (block / "holders").mkdir()
        for attr, value in (("removable", removable), ("size", sectors), ("ro", ro)):
            (block / attr).write_text(f"{value}\n")
        self.link(name, block)
        for number in range(1, partitions + 1):
            part = block / f"{name}{number}"
            (part / "holders").mkdir(parents=True)
            (part / "partition").write_text(f"{number}\n")
            (part / "size").write_text(f"{sectors // (partitions + 1)}\n")
            (part / "ro").write_text(f"{ro}\n")
            self.link(part.name, part)
            self.node(part.name)
        return self.node(name)

    def link(self, name: str, target: Path) -> None:
        link = self.root / "sys" / "class" / "block" / name
        link.symlink_to(os.path.relpath(target, link.parent))

    def node(self, name: str) -> Path:
        """A zero-filled file for the device node."""
        path = self.root / "dev" / name
        with open(path, "wb") as f:
            f.truncate(STICK_SECTORS * 512)
        return path

    def label(self, part: str, label: str) -> None:
        (self.root / "dev" / "disk" / "by-label" / label).symlink_to(f"../../{part}")

    def holder(self, part: str, holder: str, dm_name: str) -> None:
        """Device-mapper device `holder` on top of partition `part`."""
        part_dir = (self.root / "sys" / "class" / "block" / part).resolve()
        dm = self.root / "sys" / "devices" / "virtual" / "block" / holder
        (dm / "dm").mkdir(parents=True)
        (dm / "dm" / "name").write_text(f"{dm_name}\n")
        (dm / "slaves").mkdir()
        (dm / "slaves" / part).symlink_to(os.path.relpath(part_dir, dm / "slaves"))
        (part_dir / "holders" / holder).symlink_to(os.path.relpath(dm, part_dir / "holders"))
        self.link(holder, dm)

    def devno(self, devno: int, part: str) -> None:
        """Make the real device number `devno` name fake partition `part`."""
        link = self.root / "sys" / "dev" / "block" / f"{os.major(devno)}:{os.minor(devno)}"
        target = (self.root / "sys" / "class" / "block" / part).resolve()
        link.symlink_to(os.path.relpath(target, link.parent))

    def mounts(self, lines: list[str]) -> None:
        base = ["sysfs /sys sysfs rw 0 0", "proc /proc proc rw 0 0",
                "/dev/sda1 / ext4 rw 0 0"]
        (self.root / "proc" / "mounts").write_text("\n".join(base + lines) + "\n")

    def swaps(self, lines: list[str]) -> None:
        (self.root / "proc" / "swaps").write_text(
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
            + "".join(line + "\n" for line in lines))


def writer(image: Path, dev: Path | str, sysroot: Path | None, stdin=subprocess.DEVNULL,
           **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("SHOOTDOWN_USB_") and k != "YES"}
    if sysroot is not None:
        environ["SHOOTDOWN_USB_SYSROOT"] = str(sysroot)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "tools.run.usb", str(image), str(dev)], cwd=ROOT,
                          stdin=stdin, capture_output=True, text=True, timeout=60, env=environ)


def with_answer(image: Path, dev: Path, sysroot: Path, answer: str,
                **env: str) -> subprocess.CompletedProcess:
    """The writer with a terminal for stdin, on which `answer` is typed."""
    master, slave = pty.openpty()
    try:
        os.write(master, answer.encode())
        return writer(image, dev, sysroot, stdin=slave, **env)
    finally:
        os.close(slave)
        os.close(master)


def untouched(dev: Path) -> bool:
    with open(dev, "rb") as f:
        return not f.read().strip(b"\0")


def holds_image(dev: Path, image: Path) -> bool:
    data = image.read_bytes()
    with open(dev, "rb") as f:
        return f.read(len(data)) == data


def says(proc: subprocess.CompletedProcess, status: int, *texts: str) -> str:
    """"" if the run ended with `status` and its output holds every text,
    else what it did instead."""
    output = proc.stdout + proc.stderr
    missing = [t for t in texts if t not in output]
    if proc.returncode == status and not missing:
        return ""
    return (f"exit status {proc.returncode} (want {status})"
            + (f", output lacks {missing[0]!r}" if missing else "") + f"; output:\n{output}")


def refusal(cases: Cases, name: str, proc: subprocess.CompletedProcess, dev: Path | None,
            *texts: str) -> None:
    why = says(proc, 1, *texts)
    if not why and dev is not None and not untouched(dev):
        why = "refused, yet the device was written"
    cases.check(f"refuses_{name}", not why, why)


def fresh(scratch: Path, name: str) -> FakeHost:
    return FakeHost(scratch / name)


def check_refusals(cases: Cases, scratch: Path, image: Path) -> None:
    yes = {"YES": "1"}

    host = fresh(scratch, "missing")
    refusal(cases, "missing_device", writer(image, host.root / "dev" / "sdz", host.root, **yes),
            None, "no such device")

    host = fresh(scratch, "chardev")
    refusal(cases, "not_block_device", writer(image, "/dev/null", host.root, **yes), None,
            "not a block device")

    # Outside test mode a regular file is never a target.
    host = fresh(scratch, "realmode")
    stick = host.disk("sdb")
    refusal(cases, "file_outside_test_mode", writer(image, stick, None, **yes), stick,
            "not a block device")

    host = fresh(scratch, "partition")
    host.disk("sdb")
    refusal(cases, "partition", writer(image, host.root / "dev" / "sdb1", host.root, **yes),
            host.root / "dev" / "sdb1", "a partition (number 1) of /dev/sdb", "DEV=/dev/sdb")

    host = fresh(scratch, "fixed")
    disk = host.disk("sda", scsi=SATA_SCSI, removable=0, vendor="ATA", model="Samsung SSD")
    refusal(cases, "not_removable_not_usb", writer(image, disk, host.root, **yes), disk,
            "neither removable nor on a USB bus")

    host = fresh(scratch, "mounted")
    stick = host.disk("sdb")
    host.mounts([r"/dev/sdb1 /media/u/MY\040STICK vfat rw 0 0"])
    refusal(cases, "mounted", writer(image, stick, host.root, **yes), stick,
            "/dev/sdb1 is mounted on /media/u/MY STICK", "umount")

    host = fresh(scratch, "root")
    stick = host.disk("sdb", partitions=2)
    host.mounts(["/dev/sdb2 / ext4 rw 0 0"])
    refusal(cases, "holding_root", writer(image, stick, host.root, **yes), stick,
            "holds /", "the system runs from")

    host = fresh(scratch, "boot")
    stick = host.disk("sdb", partitions=2)
    host.mounts(["/dev/sdb1 /boot ext4 rw 0 0"])
    refusal(cases, "holding_boot", writer(image, stick, host.root, **yes), stick,
            "holds /boot")

    # / mounted as /dev/root (no name to match): its device number tells.
    host = fresh(scratch, "devno")
    stick = host.disk("sdb", partitions=2)
    host.devno(os.stat("/").st_dev, "sdb2")
    refusal(cases, "holding_root_by_device_number", writer(image, stick, host.root, **yes),
            stick, "holds /", "the system runs from")

    host = fresh(scratch, "swap")
    stick = host.disk("sdb", partitions=2)
    host.swaps(["/dev/sdb2                               partition\t1048572\t\t0\t\t-2"])
    refusal(cases, "swap", writer(image, stick, host.root, **yes), stick,
            "/dev/sdb2 on it is in use as swap", "swapoff")

    host = fresh(scratch, "holder")
    stick = host.disk("sdb", partitions=2)
    host.holder("sdb2", "dm-0", "vg-data")
    refusal(cases, "holder", writer(image, stick, host.root, **yes), stick,
            "/dev/sdb2 is in use by dm-0 (vg-data)")

    host = fresh(scratch, "small")
    stick = host.disk("sdb", sectors=IMAGE_SIZE // 512 - 1)
    refusal(cases, "too_small", writer(image, stick, host.root, **yes), stick, "too small")

    host = fresh(scratch, "nomedium")
    stick = host.disk("mmcblk0", sectors=0, partitions=0)
    refusal(cases, "no_medium", writer(image, stick, host.root, **yes), stick, "no medium")

    host = fresh(scratch, "ro")
    stick = host.disk("sdb", ro=1)
    refusal(cases, "read_only", writer(image, stick, host.root, **yes), stick, "read-only")

    host = fresh(scratch, "user")
    stick = host.disk("sdb")
    refusal(cases, "not_root", writer(image, stick, host.root, SHOOTDOWN_USB_EUID="1000", **yes),
            stick, "needs root", "sudo make usb")

    host = fresh(scratch, "batch")
    stick = host.disk("sdb")
    refusal(cases, "stdin_not_a_terminal", writer(image, stick, host.root), stick,
            "stdin is not a terminal", "YES=1")

    # Ctrl-D: end of input, no answer at all.
    for name, answer in (("y", "y\n"), ("YES", "YES\n"), ("yes_please", "yes please\n"),
                         ("end_of_input", "\x04")):
        host = fresh(scratch, f"answer-{name}")
        stick = host.disk("sdb")
        refusal(cases, f"answer_{name}", with_answer(image, stick, host.root, answer), stick,
                "Type yes to write", "not 'yes': nothing written")

    host = fresh(scratch, "noimage")
    stick = host.disk("sdb")
    refusal(cases, "no_image", writer(scratch / "none.iso", stick, host.root, **yes), stick,
            "make iso")


def check_writes(cases: Cases, scratch: Path, image: Path) -> None:
    # Confirmed on a terminal; a USB stick that calls itself fixed (many do).
    host = fresh(scratch, "write")
    stick = host.disk("sdb", removable=0, partitions=2)
    host.label("sdb1", r"MY\x20STICK")
    host.mounts(["/dev/sdc1 /media/u/OTHER vfat rw 0 0"])  # another disk's mount
    proc = with_answer(image, stick, host.root, "yes\n")
    why = says(proc, 0, "/dev/sdb: SanDisk Cruzer Blade, 16.8 MB (USB)",
               '/dev/sdb1: 5.6 MB, label "MY STICK"', "Type yes to write", "verified")
    if not why and not holds_image(stick, image):
        why = "said verified, but the device does not hold the image"
    cases.check("writes_and_verifies", not why, why)

    # YES=1, a removable card reader that is not on USB.
    host = fresh(scratch, "card")
    card = host.disk("mmcblk0", scsi="devices/platform/sdhci.0/mmc_host/mmc0/mmc0:0001",
                     removable=1, partitions=0)
    proc = writer(image, card, host.root, YES="1")
    why = says(proc, 0, "removable", "no partitions", "verified")
    if not why and not holds_image(card, image):
        why = "said verified, but the device does not hold the image"
    cases.check("writes_removable_card_with_YES", not why, why)

    # The stick loses a bit after the write: the read-back must see it.
    host = fresh(scratch, "corrupt")
    stick = host.disk("sdb")
    proc = writer(image, stick, host.root, YES="1", SHOOTDOWN_USB_CORRUPT=str(IMAGE_SIZE // 2))
    why = says(proc, 1, "VERIFY FAILED")
    if not why and "verified:" in proc.stdout:
        why = "said verified as well"
    cases.check("verify_catches_a_corrupted_write", not why, why)


def check_make(cases: Cases, scratch: Path) -> None:
    """make usb without DEV: the usage, and no image built for nothing."""
    environ = {k: v for k, v in os.environ.items() if k not in ("DEV", "MAKEFLAGS", "MFLAGS")}
    build = scratch / "build"
    proc = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "usb",
                           f"BUILD={build}"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, env=environ)
    why = "" if "usage: make usb DEV=/dev/sdX" in proc.stderr and proc.returncode != 0 \
        else f"exit status {proc.returncode}; output:\n{proc.stdout}{proc.stderr}"
    if not why and build.exists():
        why = f"built {build} although there is no DEV to write to"
    cases.check("make_usb_without_DEV_prints_usage", not why, why)

    proc = subprocess.run([sys.executable, "-m", "tools.run.usb"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    why = "" if proc.returncode == 2 and "usage:" in proc.stderr else \
        f"exit status {proc.returncode}; output:\n{proc.stderr}"
    cases.check("no_arguments_print_usage", not why, why)


def check_boot_media(cases: Cases, scratch: Path) -> None:
    """The QEMU command line MEDIA=usb gives: a usb-storage stick on xHCI,
    first in the boot order, and no CD-ROM drive or -boot order beside it."""
    iso = scratch / "boot.iso"
    s = boot.Settings(media="usb", accel="tcg", smp=1).resolve()
    cmd = boot.Qemu().launch(s, iso, scratch)[0]
    words = " ".join(cmd)
    why = next((f"QEMU command lacks {w!r}: {words}" for w in
                ("qemu-xhci,id=xhci", f"if=none,id=stick,file={iso},format=raw,readonly=on",
                 "usb-storage,bus=xhci.0,drive=stick,removable=on,bootindex=1")
                if w not in cmd), "")
    if not why and ("media=cdrom" in words or "-boot" in cmd):
        why = f"a CD-ROM or -boot order beside the stick: {words}"
    cases.check("media_usb_boots_the_stick_alone", not why, why)

    try:
        boot.Settings(media="floppy").resolve()
        why = "MEDIA=floppy was accepted"
    except boot.ConfigError as e:
        why = "" if "MEDIA='floppy': expected cdrom or usb" in str(e) else f"said: {e}"
    cases.check("media_bad_value_refused", not why, why)


def main() -> int:
    cases = Cases()
    scratch = Path(tempfile.mkdtemp(prefix="shootdown-usb-"))
    try:
        image = scratch / "image.iso"
        image.write_bytes(os.urandom(IMAGE_SIZE))
        check_refusals(cases, scratch, image)
        check_writes(cases, scratch, image)
        check_make(cases, scratch)
        check_boot_media(cases, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
