"""The layers hold: one declaration (pyproject.toml's ``[tool.importlinter]``), every import counted.

* import-linter's contracts are kept (``lint-imports``, in a process of its own): imports go down the layers of
  docs/architecture.md, no package or module cycle at any depth, a core without I/O, a client without the server;
* every package and top module of the service has its place in the layers (a new one cannot slip past);
* the graph the contracts read counts every import: at module level, inside a function, and inside a
  ``TYPE_CHECKING`` block;
* no module imports another module's private name (``from x import _y``).
"""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "pyproject.toml")
OURS = ("pokdeng_core", "pokdeng_client", "pokdeng_service")


def _config() -> dict[str, object]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    config: dict[str, object] = data["tool"]["importlinter"]
    return config


def _python_files(*tops: str) -> Iterator[Path]:
    for top in tops:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "_pb2" not in path.name:
                yield path


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, tree: ast.AST | None = None) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of a file with the absolute module it names (relative ones resolved)."""
    module = _module_name(path)
    for node in ast.walk(tree or ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                keep = len(base) - node.level + (1 if path.name == "__init__.py" else 0)
                yield node, ".".join(base[:keep] + ([node.module] if node.module else []))
            elif node.module:
                yield node, node.module


def test_the_import_contracts_hold() -> None:
    """In a process of its own: import-linter configures logging with ``dictConfig``, whose default
    ``disable_existing_loggers`` silenced every logger the test process had made (``pokdeng.wallet`` among
    them, for every later test of the run), and left a handler on the stdout pytest captured then."""
    check = f"import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports({CONFIG!r}, no_cache=True))"
    ours = logging.getLogger("pokdeng.test_layers")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not ours.disabled  # (logging in this process is left as it was)


def test_every_package_and_top_module_of_the_service_has_a_layer() -> None:
    contracts = _config()["contracts"]
    assert isinstance(contracts, list)
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    placed = {name.strip() for row in layers for name in row.split("|")}
    service = ROOT / "pokdeng_service"
    units = {f"pokdeng_service.{p.name}" for p in service.iterdir() if (p / "__init__.py").exists()}
    units |= {f"pokdeng_service.{p.stem}" for p in service.glob("*.py") if p.name != "__init__.py"}
    units |= {"pokdeng_core", "pokdeng_client"}
    assert units - placed == set(), "give each a row in [tool.importlinter] layers and docs/architecture.md"
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [unit for unit in sorted(units) if f"`{unit}`" not in architecture]
    assert missing == [], "docs/architecture.md's layer table names every layer"


def test_the_graph_counts_lazy_and_type_checking_imports() -> None:
    """Each import of ours, wherever it stands, is an edge of the graph the contracts check."""
    graph = grimp.build_graph(*OURS, include_external_packages=True, cache_dir=None)
    lazy = checking = 0
    for path in _python_files(*OURS):
        importer = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = (ast.FunctionDef, ast.AsyncFunctionDef)
        nested = {id(n) for f in ast.walk(tree) if isinstance(f, functions) for n in ast.walk(f)}
        guarded = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for n in ast.walk(block)
        }
        for node, imported in _imports(path, tree):
            if not imported.startswith(OURS):
                continue
            if isinstance(node, ast.ImportFrom):  # ``from package import module``: the module
                modules = [f"{imported}.{a.name}" for a in node.names if f"{imported}.{a.name}" in graph.modules]
                imported = modules[0] if modules else imported
            while imported not in graph.modules:  # ``import package.name``: the package's module
                imported = imported.rsplit(".", 1)[0]
            if id(node) in nested:
                lazy += 1
            elif id(node) in guarded:
                checking += 1
            else:
                continue
            assert graph.direct_import_exists(importer=importer, imported=imported), (importer, imported)
    assert lazy > 0 and checking > 0  # (both kinds exist, so the check above is not empty)


def test_no_module_imports_a_private_name_of_another() -> None:
    found = []
    for path in _python_files(*OURS, "pokdeng_testkit", "tests", "bench"):
        for node, imported in _imports(path):
            if isinstance(node, ast.ImportFrom) and imported.startswith((*OURS, "pokdeng_testkit", "tests", "bench")):
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno}: {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert found == []
