"""The tests and the benchmarks share ``pokdeng_testkit`` and never import each other.

* nothing under ``tests/`` imports ``bench``, and nothing under ``bench/`` imports ``tests``;
* ``pokdeng_testkit`` imports neither of them, nor pytest (the benchmarks run without it);
* the wheel is made of the service's packages only (tests/test_wheel.py checks the built wheel).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported(folder: str) -> Iterator[tuple[str, str]]:
    """(file, top-level name) of every absolute import under ``folder``, wherever it stands in the file."""
    for path in sorted((ROOT / folder).rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                yield str(path.relative_to(ROOT)), name.split(".")[0]


def test_tests_do_not_import_the_benchmarks() -> None:
    assert [f for f, top in _imported("tests") if top == "bench"] == []


def test_the_benchmarks_do_not_import_the_tests() -> None:
    assert [f for f, top in _imported("bench") if top == "tests"] == []


def test_the_testkit_imports_neither_nor_pytest() -> None:
    assert [(f, top) for f, top in _imported("pokdeng_testkit") if top in ("tests", "bench", "pytest")] == []


def test_the_testkit_is_not_a_package_of_the_wheel() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not [pattern for pattern in include if "pokdeng_testkit".startswith(pattern.rstrip("*"))], include
