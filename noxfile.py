"""The project's commands: ``python -m nox -s gates``, ``-s fast``, ``-s tests`` (CONTRIBUTING.md).

* ``gates``  the quality gates, outside the test run: ``mypy --strict`` (the three packages, the test kit,
  the tests, the benchmarks and this file), ``ruff check``, ``ruff format --check``, ``lint-imports`` (the layers of
  docs/architecture.md, ``[tool.importlinter]``), and ``buf lint`` and ``buf breaking`` against the published
  API (``proto/baseline/pokdeng-v1.binpb``) with the buf pinned in ``tests/node/package.json``.
* ``fast``   the fast loop: ``python -m pytest -m "not slow"`` (the unit, property, API and CLI tests on SQLite).
* ``tests``  the whole suite: ``python -m pytest``, as the README says and ``.ci/run`` runs it.

Each runs in the Python environment nox itself runs in (no virtualenv of its own): install the project with
``python -m pip install -e '.[test]'`` first. ``nox --force-venv-backend venv -s gates`` makes a fresh one and
installs the project there. Arguments after ``--`` go to pytest (``nox -s fast -- -x tests/core``).

buf needs Node.js and npm (``npm ci`` in ``tests/node`` installs the pinned buf): without them ``gates`` says
so and leaves buf out, except under ``CI=true``, where that is a failure (as in the tests, tests/needs.py).
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
TYPED = ("pokdeng_core", "pokdeng_service", "pokdeng_client", "pokdeng_testkit", "tests", "bench", "noxfile.py")
PROTO = "proto"
BASELINE = "proto/baseline/pokdeng-v1.binpb"

nox.options.default_venv_backend = "none"  # the environment nox runs in (see the docstring)
nox.options.sessions = ["gates"]
nox.options.error_on_missing_interpreters = True


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _install(session: nox.Session) -> None:
    """The project and its test tools, when the session has an environment of its own."""
    if session.venv_backend not in ("none", None):
        session.install("-e", ".[test]")


@nox.session
def gates(session: nox.Session) -> None:
    """mypy --strict, ruff check, ruff format --check, lint-imports, buf lint and buf breaking."""
    _install(session)
    session.run("python", "-m", "mypy", "--strict", *TYPED)
    session.run("python", "-m", "ruff", "check", ".")
    session.run("python", "-m", "ruff", "format", "--check", ".")
    if "importlinter" in tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {}):
        session.run("lint-imports")  # (its contracts: pyproject.toml, found in the root)
    _buf(session)


def _buf(session: nox.Session) -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        message = f"buf lint and buf breaking need {' and '.join(missing)} (Debian: nodejs npm)"
        if _under_ci():
            session.error(f"{message}: CI=true must have them")
        session.warn(f"{message}: left out")
        return
    # the buf pinned in tests/node/package-lock.json, installed by `npm ci` there when not yet (tests/node/packages.py)
    found = session.run("python", "-c", "from tests.node.packages import install; print(install().buf)", silent=True)
    assert isinstance(found, str)
    buf = found.strip().splitlines()[-1]
    env = {"BUF_CACHE_DIR": str(ROOT / ".nox" / "buf-cache")}  # (nothing under the home directory)
    with session.chdir(ROOT):
        session.run(buf, "lint", PROTO, external=True, env=env)
        session.run(buf, "breaking", PROTO, "--against", BASELINE, external=True, env=env)


@nox.session
def fast(session: nox.Session) -> None:
    """The fast loop: every test not marked slow (no PostgreSQL, browser, Node.js, packaging, crash runs)."""
    _install(session)
    session.run("python", "-m", "pytest", "-m", "not slow", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite (the README's test command)."""
    _install(session)
    session.run("python", "-m", "pytest", *session.posargs)
