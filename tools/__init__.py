"""The host tools of shootdown, one folder per job (tools/README.md). Run
them as modules from the repository root: python3 -m tools.<job>.<tool>."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository (or lab tree)
