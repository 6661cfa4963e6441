"""Regenerate the Python code of the gRPC API from ``proto/``: ``python -m pokdeng_service.api.generate``.

The .proto file lives at ``proto/pokdeng/v1/pokdeng.proto`` (the layout other
languages expect for package ``pokdeng.v1``). protoc names the generated Python
modules after the file's import path, so the generator maps that file to the
import path ``pokdeng_service/api/v1/pokdeng.proto``: the modules become
``pokdeng_service.api.v1.pokdeng_pb2`` and ``..._pb2_grpc`` and their imports of
each other work.

It runs the protoc bundled with the installed grpcio-tools (in-process) and the
installed mypy-protobuf (for the ``.pyi`` stubs), and writes ``GENERATED``, a
stamp naming those versions: ``tests/api/test_generated_code.py`` regenerates
into a temporary folder and requires identical files and versions.

It also copies the .proto file into the package, as ``pokdeng_service/api/pokdeng.proto``,
so that the installed package (the wheel) carries its API:
``importlib.resources.files("pokdeng_service.api").joinpath("pokdeng.proto")``. The file under
``proto/`` is the one to edit; ``tests/test_wheel.py`` requires the copy to be identical.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
PROTO_FILE = Path("pokdeng/v1/pokdeng.proto")  # relative to PROTO_ROOT
IMPORT_PATH = "pokdeng_service/api/v1/pokdeng.proto"  # the import path protoc sees
PACKAGE_DIR = Path("pokdeng_service/api/v1")  # relative to ROOT and to an output root
GENERATED_FILES = ("pokdeng_pb2.py", "pokdeng_pb2.pyi", "pokdeng_pb2_grpc.py", "pokdeng_pb2_grpc.pyi")
STAMP_FILE = "GENERATED"
PACKAGED_PROTO = Path("pokdeng_service/api/pokdeng.proto")  # relative to ROOT: the copy the package carries
TOOLS = ("grpcio-tools", "mypy-protobuf", "protobuf")


class GenerationError(RuntimeError):
    pass


def tool_versions() -> dict[str, str]:
    """The installed version of each code generator the output depends on."""
    versions: dict[str, str] = {}
    for name in TOOLS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            raise GenerationError(f"{name} is not installed: pip install -e '.[test]' (it generates the API)") from None
    return versions


def stamp_text(versions: dict[str, str]) -> str:
    lines = [
        f"# Generated from proto/{PROTO_FILE.as_posix()} by `python -m pokdeng_service.api.generate`.",
        "# The generated code depends on these tool versions; regenerate after changing any of them.",
        *(f"{name}=={version}" for name, version in sorted(versions.items())),
    ]
    return "\n".join(lines) + "\n"


def read_stamp(path: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#") and "==" in line:
            name, version = line.split("==", 1)
            versions[name.strip()] = version.strip()
    return versions


def _plugin(directory: Path, name: str, function: str) -> Path:
    """An executable that runs a mypy-protobuf entry point with this very interpreter (not whatever is on PATH)."""
    script = directory / f"protoc-gen-{name}"
    script.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; from mypy_protobuf.main import {function}; '
        f'sys.exit({function}())"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def generate_into(out_root: Path) -> list[Path]:
    """Run protoc; the files land in ``out_root / PACKAGE_DIR``. Returns their paths."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # grpcio-tools: for development only

    tool_versions()  # fail early and clearly when a generator is missing
    out_root.mkdir(parents=True, exist_ok=True)
    well_known = Path(protoc.__file__).parent / "_proto"
    mapped_dir = Path(IMPORT_PATH).parent.as_posix()
    with tempfile.TemporaryDirectory(prefix="pokdeng-protoc-") as plugins:
        mypy = _plugin(Path(plugins), "mypy", "main")
        mypy_grpc = _plugin(Path(plugins), "mypy_grpc", "grpc")
        args = [
            "grpc_tools.protoc",
            f"--proto_path={mapped_dir}={(PROTO_ROOT / PROTO_FILE.parent).as_posix()}",
            f"--proto_path={well_known.as_posix()}",
            f"--plugin=protoc-gen-mypy={mypy}",
            f"--plugin=protoc-gen-mypy_grpc={mypy_grpc}",
            f"--python_out={out_root}",
            f"--grpc_python_out={out_root}",
            f"--mypy_out=quiet:{out_root}",
            f"--mypy_grpc_out=quiet:{out_root}",
            IMPORT_PATH,
        ]
        code = protoc.main(args)
    if code != 0:
        raise GenerationError(f"protoc failed with exit code {code} (arguments: {' '.join(args[1:])})")
    produced = [out_root / PACKAGE_DIR / name for name in GENERATED_FILES]
    missing = [str(p) for p in produced if not p.exists()]
    if missing:
        raise GenerationError(f"protoc did not write {', '.join(missing)}")
    (out_root / PACKAGE_DIR / STAMP_FILE).write_text(stamp_text(tool_versions()))
    return [*produced, out_root / PACKAGE_DIR / STAMP_FILE]


def generate(root: Path = ROOT) -> list[Path]:
    """Regenerate the checked-in files under ``root / PACKAGE_DIR`` (via a temporary folder: all or nothing),
    and copy the .proto file to ``root / PACKAGED_PROTO``."""
    target = root / PACKAGE_DIR
    with tempfile.TemporaryDirectory(prefix="pokdeng-gen-") as tmp:
        produced = generate_into(Path(tmp))
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for path in produced:
            destination = target / path.name
            shutil.copyfile(path, destination)
            written.append(destination)
    shutil.copyfile(PROTO_ROOT / PROTO_FILE, root / PACKAGED_PROTO)
    written.append(root / PACKAGED_PROTO)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokdeng_service.api.generate",
        description=f"Regenerate {PACKAGE_DIR.as_posix()}/ from proto/{PROTO_FILE.as_posix()}.",
    )
    parser.parse_args(argv)
    try:
        written = generate()
    except GenerationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(os.path.relpath(path, Path.cwd()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
