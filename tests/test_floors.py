"""The dependency floors of pyproject.toml really work: every dependency at the lowest version it allows.

A fresh virtual environment, made with the Python that runs the test, gets each runtime dependency that
applies to that Python (its environment marker, such as ``python_version>='3.13'``, evaluated there)
pinned at its floor: the lowest release of the package index that the requirement allows, in any format
and for any Python (``iso4217>=1.16`` allows 1.16.20260101, the first release of 1.16; an exact pin
stays). It is installed as wheels only, so a floor that has no wheel for this Python fails here (pip
would never install it there) instead of quietly moving up to a later release. Then pokdeng, from this
source tree, runs the demo (a gRPC server and client, rounds of every profile, signed tree heads, a
bundle checked offline), writes a dispute page, settles a batch with numpy and reads its serve settings.

It runs on every supported Python, 3.11, 3.12 and 3.13 alike (CI runs it on the machine's default one).
Where the oldest release that works has no wheel for a newer Python, pyproject.toml gives that Python its
own floor with a ``python_version`` marker. Marked ``packaging`` (so ``slow``): it installs some 60 MB of
packages. Without ``packaging`` (pytest's own dependency; pip's vendored copy will do) or without a reachable
package index it is skipped, except under ``CI=true``, where that is a failure (tests/needs.py).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tomllib
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.needs import unavailable

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = ("3.11", "3.12", "3.13")  # the supported Pythons: each must have one floor for every dependency

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
raw = audit.bundle_bytes(audit.export_bundle(service, round_id))
assert audit.verify_bundle(raw).ok
page = web.dispute_page(json.loads(raw)["events"], raw, audit.verify_round(service, round_id, check_wallets=True))
assert "SETTLED" in page or "VOIDED" in page
service.close()
ids = fastsettle.hand_ids(np.array([[0, 1], [2, 3]]))
assert len(ids) == 2
assert ServeSettings(port=50052).port == 50052
print("floors ok")
"""


def _packaging() -> tuple[type[Requirement], type[Version]]:
    """``packaging``'s Requirement and Version: the package (pytest needs it), else pip's vendored copy."""
    try:
        from packaging.requirements import Requirement
        from packaging.version import Version
    except ImportError:
        try:
            from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]
            from pip._vendor.packaging.version import Version  # type: ignore[assignment]
        except ImportError:
            unavailable("the floors test needs 'packaging' (or pip's vendored copy) to read the requirements")
    return Requirement, Version


def _environment(python: str) -> dict[str, str]:
    """The marker environment of this interpreter, as if it were Python ``python`` ("3.12")."""
    return {"python_version": python, "python_full_version": f"{python}.0"}


def requirements(python: str | None = None) -> list[Requirement]:
    """The runtime dependencies that apply to this interpreter (or, given ``python``, to that version)."""
    requirement_type, _ = _packaging()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    environment = None if python is None else _environment(python)
    every = [requirement_type(text) for text in project["dependencies"]]
    return [r for r in every if r.marker is None or r.marker.evaluate(environment)]


def _pin(requirement: Requirement, version: str) -> str:
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}=={version}"  # its marker holds here: requirements() kept it


def floor(requirement: Requirement) -> str:
    """The version a requirement's lower bound names (``>=X`` or ``==X``)."""
    exact = [s.version for s in requirement.specifier if s.operator == "=="]
    lower = [s.version for s in requirement.specifier if s.operator == ">="]
    assert exact or lower, f"{requirement}: no floor (a '>=' or '==' bound) to test"
    return (exact or lower)[0]


def _index_versions(python: Path, name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Every release of ``name`` on the index, whatever its format and whichever Pythons it supports."""
    command = [str(python), "-m", "pip", "index", "versions", "--ignore-requires-python", name]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def lowest(python: Path, requirement: Requirement, env: dict[str, str]) -> str:
    """The lowest release of the index that the requirement allows: its floor itself when that is a
    release (``iso4217>=1.16`` allows 1.16.20260101, the first release of 1.16). Not only those with a
    wheel for this Python: a floor without one must fail the install, not be stepped over."""
    _, version_type = _packaging()
    done = _index_versions(python, requirement.name, env)
    if done.returncode != 0:  # a dependency that pip installs is on the index: the index did not answer
        unavailable(f"the package index did not list {requirement.name} (is it reachable?): {done.stderr[-500:]}")
    listed = next(line for line in done.stdout.splitlines() if line.startswith("Available versions:"))
    versions = [version_type(v.strip()) for v in listed.split(":", 1)[1].split(",") if v.strip()]
    allowed = sorted(v for v in versions if requirement.specifier.contains(v))
    assert allowed, f"{requirement}: no release of the index allows it"
    return str(allowed[0])


def test_every_dependency_has_a_floor() -> None:
    for python in SUPPORTED:
        floors = {r.name: floor(r) for r in requirements(python)}
        assert floors["grpcio"] == "1.85.1", python  # what the generated code checks for (1.85.0 refuses it)
        assert {"protobuf", "jinja2", "pydantic", "pydantic-settings", "numpy", "orjson"} <= set(floors), python


def test_each_supported_python_gets_one_floor_per_dependency() -> None:
    """Per-Python floors (``python_version`` markers) cover every supported Python exactly once: on none
    of them is a dependency missing, or listed twice."""
    requirement_type, _ = _packaging()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {requirement_type(text).name for text in project["dependencies"]}
    for python in SUPPORTED:
        applying = [r.name for r in requirements(python)]
        assert sorted(applying) == sorted(names), f"Python {python}: {sorted(applying)} is not one of each"


@pytest.mark.packaging
def test_the_floors_install_and_run(tmp_path: Path) -> None:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    wanted = requirements()  # the floors of this interpreter, markers evaluated here
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.pop("PYTHONPATH", None)
    with ThreadPoolExecutor(max_workers=4) as pool:  # one pip process per lookup, mostly waiting on the index
        pins = list(pool.map(lambda r: _pin(r, lowest(python, r, env)), wanted))
    install = [str(python), "-m", "pip", "install", "-q", "--only-binary=:all:", *pins]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (
        f"the floors {pins} do not install together as wheels on Python {running} ({platform.machine()}): "
        "a floor with no wheel for this Python needs raising, or a floor of its own for this Python "
        f"(a python_version marker in pyproject.toml):\n{done.stdout}\n{done.stderr[-4000:]}"
    )
    check = subprocess.run([str(python), "-m", "pip", "check"], env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    run_env = {**env, "PYTHONPATH": str(ROOT)}
    command = [str(python), "-c", SMOKE, str(tmp_path)]
    smoke = subprocess.run(command, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=900)
    assert smoke.returncode == 0 and "floors ok" in smoke.stdout, smoke.stdout + smoke.stderr[-6000:]
