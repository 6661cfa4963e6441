"""The dependency floors of pyproject.toml really work: every dependency at the lowest version it allows.

A fresh virtual environment gets each runtime dependency pinned at its floor (the lowest release that
``>=X`` allows, as a wheel for this Python; an exact pin stays), from the package index; then pokdeng,
from this source tree, runs the demo (a gRPC server and client, rounds of every profile, signed tree
heads, a bundle checked offline), writes a dispute page, settles a batch with numpy and reads its serve
settings.

Marked ``slow``: it installs some 60 MB of packages. It runs on the oldest Python the package supports
(3.11, what CI runs): the oldest releases of several dependencies have no wheels for newer Pythons,
which pip never picks there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
OLDEST = (3, 11)

SMOKE = r"""
import io, json, sys
from pathlib import Path
from rich.console import Console
import numpy as np
from pokdeng_core import fastsettle, settle
from pokdeng_service import audit, web
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli.demo import run_demo
from pokdeng_service.cli.settings import ServeSettings

folder = Path(sys.argv[1])
out = io.StringIO()
assert run_demo(rounds=1, db=str(folder / "demo.sqlite"), console=Console(file=out, width=120)) == 0, out.getvalue()
assert settle("room", player="9H 9C", banker="2S 3D", stake=1000).player_net == 1940
service = PartitionedPokdeng.open_read_only(StoreConfig.from_args(db=str(folder / "demo.sqlite")))
round_id = "demo-kingmaker#1"
raw = audit.bundle_bytes(service.export_bundle(round_id))
assert audit.verify_bundle(raw).ok
page = web.dispute_page(json.loads(raw)["events"], raw, service.verify_round(round_id))
assert "SETTLED" in page or "VOIDED" in page
service.close()
ids = fastsettle.hand_ids(np.array([[0, 1], [2, 3]]))
assert len(ids) == 2
assert ServeSettings(port=50052).port == 50052
print("floors ok")
"""


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(text) for text in project["dependencies"]]


def _pin(requirement: Requirement, version: str) -> str:
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    marker = f"; {requirement.marker}" if requirement.marker else ""
    return f"{requirement.name}{extras}=={version}{marker}"


def floor(requirement: Requirement) -> str:
    """The version a requirement's lower bound names (``>=X`` or ``==X``)."""
    exact = [s.version for s in requirement.specifier if s.operator == "=="]
    lower = [s.version for s in requirement.specifier if s.operator == ">="]
    assert exact or lower, f"{requirement}: no floor (a '>=' or '==' bound) to test"
    return (exact or lower)[0]


def lowest(python: Path, requirement: Requirement, env: dict[str, str]) -> str:
    """The lowest release the index has (as a wheel for this Python) that the requirement allows: its floor
    itself when it is a release (``iso4217>=1.16`` allows 1.16.20260101, the first release of 1.16)."""
    command = [str(python), "-m", "pip", "index", "versions", "--only-binary=:all:", requirement.name]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    listed = next(line for line in done.stdout.splitlines() if line.startswith("Available versions:"))
    versions = [Version(v.strip()) for v in listed.split(":", 1)[1].split(",") if v.strip()]
    allowed = sorted(v for v in versions if requirement.specifier.contains(v))
    assert allowed, f"{requirement}: no release of the index allows it"
    return str(allowed[0])


def test_every_dependency_has_a_floor() -> None:
    floors = {r.name: floor(r) for r in requirements()}
    assert floors["grpcio"] == "1.85.1"  # what the generated code checks for (1.85.0 refuses it)
    assert {"protobuf", "jinja2", "pydantic", "pydantic-settings"} <= set(floors)


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info[:2] != OLDEST, reason="the floors are installed on Python 3.11, the oldest")
def test_the_floors_install_and_run(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.pop("PYTHONPATH", None)
    pins = [_pin(r, lowest(python, r, env)) for r in requirements()]
    install = [str(python), "-m", "pip", "install", "-q", "--only-binary=:all:", *pins]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"the floors {pins} do not install together:\n{done.stdout}\n{done.stderr[-4000:]}"
    check = subprocess.run([str(python), "-m", "pip", "check"], env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    run_env = {**env, "PYTHONPATH": str(ROOT)}
    command = [str(python), "-c", SMOKE, str(tmp_path)]
    smoke = subprocess.run(command, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=900)
    assert smoke.returncode == 0 and "floors ok" in smoke.stdout, smoke.stdout + smoke.stderr[-6000:]
