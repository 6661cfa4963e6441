"""The code standard of the brief: ``mypy --strict`` and ``ruff`` clean (core and service), formatted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_mypy_strict_on_core_and_service() -> None:
    result = _run(sys.executable, "-m", "mypy", "--strict", "pokdeng_core", "pokdeng_service")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_and_format() -> None:
    check = _run(sys.executable, "-m", "ruff", "check", ".")
    assert check.returncode == 0, check.stdout + check.stderr
    formatted = _run(sys.executable, "-m", "ruff", "format", "--check", "pokdeng_core", "pokdeng_service")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
