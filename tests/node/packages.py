"""The npm packages of ``tests/node`` (a Node.js gRPC client and the pinned buf), installed on demand.

``install()`` runs ``npm ci`` in ``tests/node`` (into ``tests/node/node_modules``, exactly what
``package-lock.json`` pins, install scripts off) unless the installed tree already matches the lock:
a stamp in ``node_modules`` holds the SHA-256 of ``package.json`` and ``package-lock.json`` (and the
Node version and platform), and every direct dependency must be there at its pinned version. One
install at a time (a file lock), so parallel runs share it.

When ``node``/``npm`` are missing or ``npm ci`` fails, the tests that need them are skipped with the
reason, except under ``CI=true``, where they fail (``.ci/run`` installs Node.js and npm).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.needs import unavailable as unavailable
from tests.needs import under_ci as under_ci

NODE_DIR = Path(__file__).resolve().parent
MODULES = NODE_DIR / "node_modules"
STAMP = MODULES / ".pokdeng-installed"
LOCK_FILE = NODE_DIR / ".install.lock"
INSTALL_TIMEOUT = 600.0


@dataclass(frozen=True)
class NodePackages:
    node: Path
    modules: Path

    @property
    def buf(self) -> Path:
        """The pinned buf (the npm package's launcher, which runs the platform's binary)."""
        return self.modules / ".bin" / "buf"

    @property
    def play(self) -> Path:
        return NODE_DIR / "play.js"


def _node_version(node: str) -> str:
    try:
        return subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        unavailable(f"`{node} --version` failed: {exc}")


def _stamp(node_version: str) -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((NODE_DIR / name).read_bytes())
    digest.update(f"{node_version.strip()} {platform.system()} {platform.machine()}".encode())
    return digest.hexdigest()


def _pinned() -> dict[str, str]:
    manifest = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))
    dependencies: dict[str, str] = manifest["dependencies"]
    return dependencies


def _installed_matches(stamp: str) -> bool:
    try:
        if STAMP.read_text(encoding="utf-8").strip() != stamp:
            return False
        for name, version in _pinned().items():
            found = json.loads((MODULES / name / "package.json").read_text(encoding="utf-8"))
            if found.get("version") != version:
                return False
    except (OSError, ValueError):
        return False
    return True


def install() -> NodePackages:
    """The packages of ``tests/node/package-lock.json`` in ``tests/node/node_modules`` (``npm ci`` if needed)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if path is None)
        unavailable(f"{missing} not found on PATH: install Node.js 18 or newer with npm (Debian: nodejs npm)")
    stamp = _stamp(_node_version(node))
    with LOCK_FILE.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed_matches(stamp):
            command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"]
            env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_loglevel": "warn"}
            try:
                result = subprocess.run(
                    command, cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT
                )
            except (OSError, subprocess.SubprocessError) as exc:
                unavailable(f"`npm ci` in {NODE_DIR} did not run: {exc}")
            if result.returncode != 0:
                output = (result.stdout + result.stderr).strip()[-4000:]
                unavailable(f"`npm ci` in {NODE_DIR} failed (exit {result.returncode}):\n{output}")
            if not (MODULES / ".bin" / "buf").exists():
                unavailable(f"`npm ci` in {NODE_DIR} left no {MODULES / '.bin' / 'buf'}")
            STAMP.write_text(stamp + "\n", encoding="utf-8")
            if not _installed_matches(stamp):
                unavailable(f"`npm ci` in {NODE_DIR} did not install the pinned versions of {sorted(_pinned())}")
    return NodePackages(Path(node), MODULES)
