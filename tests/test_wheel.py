"""The wheel is the whole package: every subpackage, the API's .proto, the typing markers, the licence, the CLI,
and the dispute page's templates and scripts (it renders them, installed from the wheel alone).

The wheel is built from a copy of the sources in a temporary folder (so that the build's own
``build/`` and ``*.egg-info`` folders never land in the working tree), with the installed
setuptools: ``pip wheel --no-deps --no-build-isolation``, a few seconds and no network.
"""

from __future__ import annotations

import configparser
import importlib.resources
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest

from pokdeng_service.api import generate as gen

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = tuple(name.rstrip("*.") for name in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"])
WEB = ROOT / "pokdeng_service" / "web"
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "setup.py", "setup.cfg", "MANIFEST.in")
NOT_SOURCES = shutil.ignore_patterns("__pycache__", "*.pyc", ".ruff_cache", ".mypy_cache", "*.egg-info")
LICENSE_FIRST_LINES = ("Apache License", "Version 2.0, January 2004")
COPYRIGHT = "Copyright 2026 the pokdeng authors"


def test_the_package_carries_the_proto_file_identical_to_proto() -> None:
    """``proto/`` is the file to edit; the package's copy follows it (``python -m pokdeng_service.api.generate``)."""
    package = ".".join(gen.PACKAGED_PROTO.parent.parts)
    packaged = importlib.resources.files(package).joinpath(gen.PACKAGED_PROTO.name)
    assert packaged.is_file(), f"{gen.PACKAGED_PROTO} is missing: run `python -m pokdeng_service.api.generate`"
    source = (gen.PROTO_ROOT / gen.PROTO_FILE).read_bytes()
    assert packaged.read_bytes() == source, (
        f"{gen.PACKAGED_PROTO} differs from proto/{gen.PROTO_FILE.as_posix()}: "
        "run `python -m pokdeng_service.api.generate` and commit the result"
    )


def test_the_license_is_apache_2() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert tuple(lines[:2]) == LICENSE_FIRST_LINES
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert COPYRIGHT in text


def source_packages() -> list[str]:
    """Every package under the top-level packages the wheel is made of (``PACKAGES``), as dotted names."""
    found = []
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            found.append(".".join(init.parent.relative_to(ROOT).parts))
    return found


def test_every_folder_of_python_code_is_a_package() -> None:
    """A folder of modules without ``__init__.py`` would be left out of the wheel without a word."""
    loose = []
    for top in PACKAGES:
        for module in (ROOT / top).rglob("*.py"):
            if "__pycache__" not in module.parts and not (module.parent / "__init__.py").exists():
                loose.append(str(module.relative_to(ROOT)))
    assert not loose, f"modules outside any package: {', '.join(sorted(loose))}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    pytest.importorskip("setuptools", reason="building the wheel without isolation needs setuptools installed")
    work = tmp_path_factory.mktemp("wheel")
    source, out = work / "src", work / "out"
    source.mkdir()
    for name in BUILD_INPUTS:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    for top in PACKAGES:
        shutil.copytree(ROOT / top, source / top, ignore=NOT_SOURCES)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), "."]
    done = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    (built,) = out.glob("pokdeng-*.whl")
    with zipfile.ZipFile(built) as archive:
        yield archive


def dist_info(archive: zipfile.ZipFile) -> str:
    (folder,) = {name.split("/", 1)[0] for name in archive.namelist() if name.split("/", 1)[0].endswith(".dist-info")}
    return folder


@pytest.mark.packaging
def test_wheel_holds_every_subpackage(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    packages = source_packages()
    assert {"pokdeng_core", "pokdeng_service", "pokdeng_client.v1"} <= set(packages)
    missing = [p for p in packages if p.replace(".", "/") + "/__init__.py" not in names]
    assert not missing, f"packages missing from the wheel: {', '.join(missing)}"
    modules = [
        str(path.relative_to(ROOT).as_posix())
        for top in PACKAGES
        for path in (ROOT / top).rglob("*.py*")
        if path.suffix in (".py", ".pyi") and "__pycache__" not in path.parts
    ]
    absent = sorted(m for m in modules if m not in names)
    assert not absent, f"modules missing from the wheel: {', '.join(absent)}"
    assert not [n for n in names if n.startswith(("tests/", "bench/", "pokdeng_testkit/"))]


@pytest.mark.packaging
def test_wheel_carries_the_proto_file(wheel: zipfile.ZipFile) -> None:
    packaged = wheel.read(gen.PACKAGED_PROTO.as_posix())
    assert packaged == (gen.PROTO_ROOT / gen.PROTO_FILE).read_bytes()
    assert b"package pokdeng.v1;" in packaged


@pytest.mark.packaging
def test_wheel_carries_the_typing_markers(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for top in PACKAGES:
        assert (ROOT / top / "py.typed").is_file()
        assert f"{top}/py.typed" in names, f"{top}/py.typed is not in the wheel"
    assert "pokdeng_client/v1/pokdeng_pb2.pyi" in names


@pytest.mark.packaging
def test_wheel_carries_the_license(wheel: zipfile.ZipFile) -> None:
    folder = dist_info(wheel)
    candidates = [f"{folder}/licenses/LICENSE", f"{folder}/LICENSE"]  # (older setuptools: no licenses/ folder)
    present = [name for name in candidates if name in wheel.namelist()]
    assert present, f"no LICENSE in {folder}"
    assert wheel.read(present[0]) == (ROOT / "LICENSE").read_bytes()
    metadata = Parser().parsestr(wheel.read(f"{folder}/METADATA").decode("utf-8"))
    assert metadata["Name"] == "pokdeng"
    assert "Apache-2.0" in (metadata.get("License-Expression") or metadata.get("License") or "")
    assert "LICENSE" in (metadata.get_all("License-File") or [])


@pytest.mark.packaging
def test_wheel_version_is_the_package_s_one_version(wheel: zipfile.ZipFile) -> None:
    """pyproject.toml's version is dynamic: ``pokdeng_service.version.__version__``, the one place."""
    from pokdeng_service.version import __version__

    assert "version" in PYPROJECT["project"]["dynamic"] and "version" not in PYPROJECT["project"]
    metadata = Parser().parsestr(wheel.read(f"{dist_info(wheel)}/METADATA").decode("utf-8"))
    assert metadata["Version"] == __version__
    assert dist_info(wheel) == f"pokdeng-{__version__}.dist-info"


@pytest.mark.packaging
def test_wheel_declares_the_console_script(wheel: zipfile.ZipFile) -> None:
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(f"{dist_info(wheel)}/entry_points.txt").decode("utf-8"))
    assert entry_points["console_scripts"]["pokdeng"] == "pokdeng_service.cli.main:main"
    module, _, function = entry_points["console_scripts"]["pokdeng"].partition(":")
    assert f"{module.replace('.', '/')}.py" in wheel.namelist()
    assert function == "main"


@pytest.mark.packaging
def test_wheel_carries_the_web_pages(wheel: zipfile.ZipFile) -> None:
    """The dispute page's templates, scripts and style sheet are package data: every file of them."""
    names = set(wheel.namelist())
    files = sorted(p for folder in ("templates", "static") for p in (WEB / folder).iterdir() if p.is_file())
    assert {p.suffix for p in files} >= {".j2", ".js", ".css"}
    missing = [str(p.relative_to(ROOT)) for p in files if p.relative_to(ROOT).as_posix() not in names]
    assert not missing, f"not in the wheel: {', '.join(missing)}"


@pytest.mark.packaging
def test_the_installed_wheel_renders_the_pages(wheel: zipfile.ZipFile, tmp_path: Path) -> None:
    """Installed from the wheel alone (not this source tree), the package finds its templates and scripts."""
    target = tmp_path / "site"
    wheel.extractall(target)
    script = (
        "import pokdeng_service, sys\n"
        "from pokdeng_service import web\n"
        "page = web.verifier_page()\n"
        "assert pokdeng_service.__file__.startswith(sys.argv[1]), pokdeng_service.__file__\n"
        "assert 'PokdengVerify' in page and 'bundle-file' in page\n"
        "print(len(page))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(target)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(done.stdout) > 20_000
