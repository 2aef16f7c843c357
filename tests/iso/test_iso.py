#!/usr/bin/env python3
"""The bootable image tools/make/mkiso.sh writes, read back as a PC's
firmware and GRUB would read it:

- both GRUB configurations (the USB stick's menu, and one entry booted at
  once with awkward words) pass grub-script-check: a syntax error there is a
  stick that boots nothing;
- the menu has the BIOS text-screen entry and, under UEFI, the entry that
  explains a dark screen;
- the MBR has a GPT's protective entry and an entry marked active (some
  legacy BIOSes boot no USB disk without one);
- the EFI system image holds the 64-bit and the 32-bit UEFI loaders;
- under OVMF, choosing the dark-screen entry in the menu prints its
  explanation (OVMF copies its console to COM1).

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/iso). Needs grub-mkrescue, xorriso, mtools and QEMU with OVMF, all from
`make deps`. Python 3.11 standard library.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools import ROOT
from tools.run import boot
from tools.test.ktap import Cases

KERNEL = Path(os.environ.get("KERNEL_ELF", ROOT / "build" / "shootdown.elf"))
MKISO = ROOT / "tools" / "make" / "mkiso.sh"
DARK_ENTRY = "shootdown: the screen stays dark (UEFI)"
DARK_TEXT = "Under UEFI there is no text screen a kernel can keep"
# The UEFI menu, in order: the dark-screen entry is the fifth.
DARK_ENTRY_DOWNS = 4
MENU_SECONDS = 60  # for OVMF to reach the menu, then for the entry's text


def mkiso(out: Path, *words: str) -> None:
    subprocess.run(["bash", str(MKISO), str(out), str(KERNEL), *words], check=True,
                   capture_output=True, text=True)


def extract(iso: Path, inside: str, out: Path) -> None:
    subprocess.run(["xorriso", "-osirrox", "on", "-indev", str(iso), "-extract", inside,
                    str(out)], check=True, capture_output=True)


def script_problems(cfg: Path) -> list[str]:
    done = subprocess.run(["grub-script-check", str(cfg)], capture_output=True, text=True)
    if done.returncode:
        return [f"grub-script-check: {(done.stdout + done.stderr).strip()}"]
    return []


def check_configs(cases: Cases, scratch: Path, menu_iso: Path) -> str:
    menu_cfg = scratch / "menu.cfg"
    extract(menu_iso, "/boot/grub/grub.cfg", menu_cfg)
    cases.check("menu_config_parses", script_problems(menu_cfg))
    text = menu_cfg.read_text()
    problems = [f"no menu entry {title!r}" for title in
                ("shootdown: 80x25 text screen (when the others stay dark)", DARK_ENTRY)
                if f"menuentry '{title}'" not in text]
    cases.check("menu_has_text_and_dark_screen_entries", problems)

    once = scratch / "once.iso"
    mkiso(once, "test=boot", "note=it's \"quoted\"", "")
    once_cfg = scratch / "once.cfg"
    extract(once, "/boot/grub/grub.cfg", once_cfg)
    problems = script_problems(once_cfg)
    if "'note=it'\\''s \"quoted\"'" not in once_cfg.read_text():
        problems.append("the quoted word is not in the entry as one GRUB word")
    cases.check("boot_at_once_config_parses", problems)
    return text


def check_mbr(cases: Cases, iso: Path) -> None:
    with open(iso, "rb") as f:
        mbr = f.read(512)
    entries = [mbr[446 + 16 * i: 462 + 16 * i] for i in range(4)]
    problems = []
    if mbr[510:512] != b"\x55\xaa":
        problems.append("no MBR signature")
    if not any(e[4] == 0xEE for e in entries):
        problems.append("no GPT protective entry (type 0xEE)")
    if not any(e[0] == 0x80 for e in entries):
        problems.append("no entry is marked active (0x80): " +
                        " ".join(f"{e[0]:02x}/{e[4]:02x}" for e in entries))
    cases.check("mbr_protective_and_active", problems)


def check_loaders(cases: Cases, scratch: Path, iso: Path) -> None:
    efi_img = scratch / "efi.img"
    extract(iso, "/efi.img", efi_img)
    listing = subprocess.run(["mdir", "-b", "-i", str(efi_img), "::/efi/boot"],
                             capture_output=True, text=True).stdout.lower()
    problems = [f"no {name} in the EFI system image" for name in ("bootx64.efi", "bootia32.efi")
                if name not in listing]
    cases.check("efi_image_has_64_and_32_bit_loaders", problems)


def serial_text(path: Path) -> str:
    """The serial log without terminal escapes (OVMF draws its menus with them)."""
    raw = path.read_bytes().decode("latin-1") if path.exists() else ""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", " ", raw)


def wait_for(path: Path, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in serial_text(path):
            return True
        time.sleep(0.5)
    return False


def check_dark_entry_boots(cases: Cases, scratch: Path, iso: Path) -> None:
    """Pick the dark-screen entry in OVMF's menu with keys from the monitor."""
    try:
        s = boot.Settings(firmware="uefi", accel="tcg", smp=1, mem_mib=128).resolve()
        run_dir = scratch / "menu-run"
        run_dir.mkdir()
        sock = run_dir / "monitor.sock"
        cmd = boot.Qemu().launch(s, iso, run_dir, monitor=sock)[0]
    except boot.ConfigError as e:
        cases.skip("uefi_dark_screen_entry_explains", str(e))
        return
    serial = run_dir / "serial.log"
    qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        why = ""
        if not wait_for(serial, DARK_ENTRY, MENU_SECONDS):
            why = "the menu with the dark-screen entry never reached COM1"
        else:
            # The first key stops the countdown; the menu starts on entry 0.
            keys = ["down"] * DARK_ENTRY_DOWNS + ["ret"]
            boot._monitor(str(sock), [f"sendkey {k}" for k in keys], quit_after=False)
            if not wait_for(serial, DARK_TEXT, MENU_SECONDS):
                why = f"the entry did not print {DARK_TEXT!r}"
        cases.check("uefi_dark_screen_entry_explains", not why, why)
    finally:
        qemu.kill()
        qemu.wait()


def main() -> int:
    cases = Cases()
    if not KERNEL.exists():
        print(f"test-iso: no kernel at {KERNEL} (make all first)", file=sys.stderr)
        return 1
    scratch = Path(tempfile.mkdtemp(prefix="shootdown-iso-"))
    try:
        menu_iso = scratch / "menu.iso"
        mkiso(menu_iso)
        check_configs(cases, scratch, menu_iso)
        check_mbr(cases, menu_iso)
        check_loaders(cases, scratch, menu_iso)
        check_dark_entry_boots(cases, scratch, menu_iso)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
