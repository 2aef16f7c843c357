"""Debian's stock Linux kernel for `make compare-linux`
(tools/bench/compare_linux.py): the linux-image-cloud-amd64 package and the
versioned image it depends on, downloaded with apt-get and unpacked into
<build>/linux without installing them on the host.

    kernel(build_dir) -> Path of boot/vmlinuz-*

The cloud flavour is small and has what QEMU's pc machine needs built in
(the 8250 serial port, ACPI power-off). apt-get update runs only when the
download fails (a machine without package lists). Python 3.11 standard
library; needs apt-get and dpkg-deb.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

PACKAGE = "linux-image-cloud-amd64"
# The metapackage's dependency that holds the kernel.
IMAGE = re.compile(r"^\s*Depends:\s*(linux-image-\S+-cloud-amd64)\s*$", re.M)


class KernelError(Exception):
    pass


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def _as_root(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return cmd
    if shutil.which("sudo") is None:
        raise KernelError(f"need root for {' '.join(cmd)}")
    return ["sudo", *cmd]


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in (done.stderr + done.stdout).splitlines()
             if line.strip() and not line.startswith("W: Download is performed unsandboxed")]
    return lines[-1] if lines else f"exit status {done.returncode}"


def _image_package() -> str:
    """The versioned package the metapackage depends on."""
    done = _run(["apt-cache", "depends", PACKAGE])
    m = IMAGE.search(done.stdout) if done.returncode == 0 else None
    if m is None:
        raise KernelError(f"apt-cache knows no {PACKAGE}: {_last_line(done)}")
    return m.group(1)


def _download(debs: Path) -> Path:
    """Both packages' .debs in debs; returns the image's."""
    debs.mkdir(parents=True, exist_ok=True)
    for attempt in ("first", "after update"):
        try:
            image = _image_package()
            done = _run(["apt-get", "download", PACKAGE, image], cwd=debs)
            if done.returncode == 0:
                break
            why = _last_line(done)
        except KernelError as e:
            why = str(e)
        if attempt != "first":
            raise KernelError(why)
        print(f"compare-linux: {why}; running apt-get update and trying again", flush=True)
        update = _run(_as_root(["apt-get", "update"]))
        if update.returncode != 0:
            raise KernelError(f"apt-get update failed: {_last_line(update)}")
    found = sorted(debs.glob(f"{image}_*.deb"))
    if not found:
        raise KernelError(f"apt-get download left no {image}_*.deb in {debs}")
    return found[-1]


def kernel(build_dir: Path) -> Path:
    """The unpacked kernel image, fetched first if it is not there yet;
    KernelError saying why it cannot be had."""
    root = build_dir / "linux" / "root"
    images = sorted(root.glob("boot/vmlinuz-*"))
    if images:
        return images[-1]
    for tool in ("apt-get", "apt-cache", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise KernelError(f"cannot get {PACKAGE}: no {tool} (a Debian or Ubuntu host "
                              "is needed)")
    try:
        deb = _download(build_dir / "linux" / "debs")
    except KernelError as e:
        raise KernelError(f"cannot get {PACKAGE}: {e}") from None
    print(f"compare-linux: unpacking {deb.name} into {root}", flush=True)
    done = _run(["dpkg-deb", "-x", str(deb), str(root)])
    images = sorted(root.glob("boot/vmlinuz-*"))
    if done.returncode != 0 or not images:
        raise KernelError(f"cannot get {PACKAGE}: dpkg-deb -x {deb.name}: {_last_line(done)}")
    return images[-1]
