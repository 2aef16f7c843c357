#!/usr/bin/env python3
"""The container recipe (container/, docs/container.md) agrees with
tools/make/deps.sh, without a container engine.

The lock (container/packages.lock) must ask for exactly the packages
deps.sh --packages names and pin each of them, every pin once, in the
form apt-get takes; container/install.sh must read the same pins from it
as this test does; the Containerfile must install from the lock and from
nothing else, on a base of the lock's release. container/run.sh and the
make targets must refuse a missing engine, a bad variable or a missing
command with a message that says what to do, and run the container as the
caller (rootful Docker with --user, rootless Docker as its own root).

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/container). Under a second: no image is built or run.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from tools import ROOT
from tools.test.ktap import Cases

CONTAINER = ROOT / "container"
LOCK = CONTAINER / "packages.lock"
CONTAINERFILE = CONTAINER / "Containerfile"
INSTALL = CONTAINER / "install.sh"
RUN = CONTAINER / "run.sh"
TIMEOUT = 30
# A Debian package name, and a version: [epoch:]upstream[-revision].
NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
VERSION = re.compile(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                       env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout + r.stderr


def header(text: str, key: str) -> str | None:
    m = re.search(rf"^# {key}: *(.*)$", text, re.M)
    return m.group(1).strip() if m else None


def pins(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


# A stand-in docker: its `info` gives the security options the test
# chooses, it has every image, and its `run` prints what it was given.
FAKE_DOCKER = """#!/bin/sh
case $1 in
info) echo "$FAKE_SECURITY_OPTIONS" ;;
image) exit 0 ;;
run) shift; echo "run: $*" ;;
esac
"""


def user_mapping(cases: Cases) -> None:
    """Who the caller is inside, for a caller of uid and gid 1000 (a
    stand-in id): rootful Docker runs as them with --user, rootless
    Docker as its own root, which is them outside."""
    with tempfile.TemporaryDirectory() as bin_dir:
        for name, text in (("docker", FAKE_DOCKER), ("id", "#!/bin/sh\necho 1000\n")):
            (Path(bin_dir) / name).write_text(text)
            (Path(bin_dir) / name).chmod(0o755)
        env = {"CONTAINER_ENGINE": "docker", "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
        rootful = "[name=seccomp,profile=default]"
        status, out = run(["bash", str(RUN), "run", "true"], dict(env, FAKE_SECURITY_OPTIONS=rootful))
        cases.check("rootful docker runs as the caller",
                    status == 0 and " --user 1000:1000 " in out, f"{status}: {out[-300:]}")
        rootless = f"{rootful[:-1]} name=rootless]"
        status, out = run(["bash", str(RUN), "run", "true"], dict(env, FAKE_SECURITY_OPTIONS=rootless))
        cases.check("rootless docker runs as its root, the caller outside",
                    status == 0 and out.startswith("run: ") and "--user" not in out,
                    f"{status}: {out[-300:]}")


def main() -> int:
    cases = Cases()
    lock = LOCK.read_text()
    pinned = pins(lock)

    status, out = run(["bash", "tools/make/deps.sh", "--packages"])
    deps = out.split()
    requested = (header(lock, "requested") or "").split()
    extra = (header(lock, "extra") or "").split()
    problems = [] if status == 0 else [f"deps.sh --packages: exit status {status}: {out[-200:]}"]
    problems += [f"deps.sh names {p}, the lock does not ask for it (make container-lock)"
                 for p in deps if p not in requested]
    problems += [f"the lock asks for {p}, deps.sh no longer names it (make container-lock)"
                 for p in requested if p not in deps]
    cases.check("the lock asks for what deps.sh names", problems)

    problems = []
    names: dict[str, str] = {}
    for pin in pinned:
        name, _, version = pin.partition("=")
        if not NAME.match(name) or not VERSION.match(version):
            problems.append(f"{pin!r} is not name=version")
        elif name in names:
            problems.append(f"{name} pinned twice ({names[name]}, {version})")
        names[name] = version
    if pinned != sorted(pinned):
        problems.append("the pins are not sorted (make container-lock writes them sorted)")
    cases.check("every pin is one name=version", problems)

    cases.check("every package asked for is pinned",
                [f"{p} has no pin" for p in requested + extra if p not in names]
                or ([] if requested else ["no '# requested:' line"]))

    status, out = run(["bash", str(INSTALL), "--print", str(LOCK)])
    cases.check("install.sh reads the same pins", status == 0 and out.split() == pinned,
                f"exit status {status}: {out[-300:]}" if status else
                f"install.sh --print gives {len(out.split())} pins, the lock has {len(pinned)}")

    text = CONTAINERFILE.read_text()
    release = header(lock, "release")
    base = re.search(r"^ARG BASE=(\S+)$", text, re.M)
    problems = []
    if not base:
        problems.append("no ARG BASE=<image> default")
    elif release is None or not base.group(1).endswith(f":{release}"):
        problems.append(f"BASE {base.group(1)} is not of the lock's release {release}")
    if not re.search(r"^FROM \$\{BASE\}$", text, re.M):
        problems.append("not FROM ${BASE}")
    if not re.search(r"install\.sh\s+\\?\s*\S*packages\.lock", text):
        problems.append("no RUN of install.sh on packages.lock")
    if re.search(r"apt-get\s+install|apt\s+install|dpkg\s+-i", text):
        problems.append("installs packages outside the lock")
    cases.check("the Containerfile installs from the lock alone", problems)

    # run.sh checks the engine with shell builtins before anything else,
    # so it can be run with no PATH at all.
    with tempfile.TemporaryDirectory() as empty:
        status, out = run(["/bin/bash", str(RUN), "shell"],
                          {"PATH": empty, "CONTAINER_ENGINE": ""})
    cases.check("no engine: a message, not a crash",
                status == 2 and "neither podman nor docker" in out, f"{status}: {out[-300:]}")
    status, out = run(["bash", str(RUN), "shell"], {"CONTAINER_ENGINE": "ls"})
    cases.check("CONTAINER_ENGINE must be podman or docker",
                status == 2 and "use podman or docker" in out, f"{status}: {out[-300:]}")
    status, out = run(["bash", str(RUN), "shell"], {"CONTAINER_ENGINE": "podman-nonesuch"})
    cases.check("CONTAINER_ENGINE must be a command",
                status == 2 and "no such command" in out, f"{status}: {out[-300:]}")
    # A stand-in engine that does nothing: the variables are refused first.
    with tempfile.TemporaryDirectory() as bin_dir:
        fake = Path(bin_dir) / "docker"
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
        env = {"CONTAINER_ENGINE": "docker", "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
        status, out = run(["bash", str(RUN), "build"], dict(env, SNAPSHOT="yesterday"))
        cases.check("SNAPSHOT must be a time", status == 2 and "SNAPSHOT=yesterday" in out,
                    f"{status}: {out[-300:]}")
        status, out = run(["bash", str(RUN), "build"], dict(env, BASE="debian bookworm"))
        cases.check("BASE must be one image", status == 2 and "name one image" in out,
                    f"{status}: {out[-300:]}")
        status, out = run(["bash", str(RUN), "run"], env)
        cases.check("run without a command says what to give",
                    status == 2 and "usage" in out, f"{status}: {out[-300:]}")

    user_mapping(cases)

    status, out = run(["make", "-s", "container-run"])
    cases.check("make container-run without CMD says what to give",
                status != 0 and "CMD='make grade LAB=L3'" in out, out[-300:])
    status, out = run(["make", "-s", "container-grade", "LAB=L42"])
    cases.check("make container-grade names the labs", status != 0 and "LAB=L42" in out,
                out[-300:])
    return cases.report()


if __name__ == "__main__":
    raise SystemExit(main())
