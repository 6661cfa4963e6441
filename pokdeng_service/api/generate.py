"""Regenerate the Python code of the gRPC API from ``proto/``: ``python -m pokdeng_service.api.generate``.

The .proto file lives at ``proto/pokdeng/v1/pokdeng.proto`` (the layout other
languages expect for package ``pokdeng.v1``). protoc names the generated Python
modules after the file's import path, so the generator maps that file to the
import path ``pokdeng_client/v1/pokdeng.proto``: the modules become
``pokdeng_client.v1.pokdeng_pb2`` and ``..._pb2_grpc`` and their imports of
each other work.

It runs the protoc bundled with the installed grpcio-tools (in-process) and the
installed mypy-protobuf (for the ``.pyi`` stubs), and writes ``GENERATED``, a
stamp naming those versions: ``tests/api/test_generated_code.py`` regenerates
into a temporary folder and requires identical files and versions.

It also copies the .proto file into the package, as ``pokdeng_client/pokdeng.proto``,
so that the installed package (the wheel) carries its API:
``importlib.resources.files("pokdeng_client").joinpath("pokdeng.proto")``. The file under
``proto/`` is the one to edit; ``tests/test_wheel.py`` requires the copy to be identical.

The same command generates the platform wallet protocol (docs/wallet.md):
``proto/pokdeng/wallet/v1/wallet.proto`` into ``pokdeng_service/wallet/v1/`` (``WALLET``, with
its own ``GENERATED`` stamp), and its version 2, ``proto/pokdeng/wallet/v2/wallet.proto`` into
``pokdeng_service/wallet/v2/`` (``WALLET_V2``). Each generated package is a ``Target``; ``TARGETS`` lists them,
``generate_into(out_root, target)`` makes one, and ``generate()`` remakes every one.
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
PROTO_FILE = Path("pokdeng/v1/pokdeng.proto")  # relative to PROTO_ROOT
IMPORT_PATH = "pokdeng_client/v1/pokdeng.proto"  # the import path protoc sees
PACKAGE_DIR = Path("pokdeng_client/v1")  # relative to ROOT and to an output root
GENERATED_FILES = ("pokdeng_pb2.py", "pokdeng_pb2.pyi", "pokdeng_pb2_grpc.py", "pokdeng_pb2_grpc.pyi")
STAMP_FILE = "GENERATED"
PACKAGED_PROTO = Path("pokdeng_client/pokdeng.proto")  # relative to ROOT: the copy the package carries
TOOLS = ("grpcio-tools", "mypy-protobuf", "protobuf")


@dataclass(frozen=True)
class Target:
    """One .proto file and the package its Python code is generated into."""

    proto_file: Path  # relative to PROTO_ROOT
    import_path: str  # the import path protoc sees (it names the generated modules)
    package_dir: Path  # relative to ROOT and to an output root
    generated_files: tuple[str, ...]
    packaged_proto: Path | None = None  # relative to ROOT: a copy the package carries, if any


API = Target(PROTO_FILE, IMPORT_PATH, PACKAGE_DIR, GENERATED_FILES, PACKAGED_PROTO)
WALLET = Target(
    Path("pokdeng/wallet/v1/wallet.proto"),
    "pokdeng_service/wallet/v1/wallet.proto",
    Path("pokdeng_service/wallet/v1"),
    ("wallet_pb2.py", "wallet_pb2.pyi", "wallet_pb2_grpc.py", "wallet_pb2_grpc.pyi"),
)
WALLET_V2 = Target(
    Path("pokdeng/wallet/v2/wallet.proto"),
    "pokdeng_service/wallet/v2/wallet.proto",
    Path("pokdeng_service/wallet/v2"),
    ("wallet_pb2.py", "wallet_pb2.pyi", "wallet_pb2_grpc.py", "wallet_pb2_grpc.pyi"),
)
TARGETS = (API, WALLET, WALLET_V2)


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


def stamp_text(versions: dict[str, str], target: Target = API) -> str:
    lines = [
        f"# Generated from proto/{target.proto_file.as_posix()} by `python -m pokdeng_service.api.generate`.",
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


def generate_into(out_root: Path, target: Target = API) -> list[Path]:
    """Run protoc for ``target``; the files land in ``out_root / target.package_dir``. Returns their paths."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # grpcio-tools: for development only

    tool_versions()  # fail early and clearly when a generator is missing
    out_root.mkdir(parents=True, exist_ok=True)
    well_known = Path(protoc.__file__).parent / "_proto"
    mapped_dir = Path(target.import_path).parent.as_posix()
    with tempfile.TemporaryDirectory(prefix="pokdeng-protoc-") as plugins:
        mypy = _plugin(Path(plugins), "mypy", "main")
        mypy_grpc = _plugin(Path(plugins), "mypy_grpc", "grpc")
        args = [
            "grpc_tools.protoc",
            f"--proto_path={mapped_dir}={(PROTO_ROOT / target.proto_file.parent).as_posix()}",
            f"--proto_path={well_known.as_posix()}",
            f"--plugin=protoc-gen-mypy={mypy}",
            f"--plugin=protoc-gen-mypy_grpc={mypy_grpc}",
            f"--python_out={out_root}",
            f"--grpc_python_out={out_root}",
            f"--mypy_out=quiet:{out_root}",
            f"--mypy_grpc_out=quiet:{out_root}",
            target.import_path,
        ]
        code = protoc.main(args)
    if code != 0:
        raise GenerationError(f"protoc failed with exit code {code} (arguments: {' '.join(args[1:])})")
    produced = [out_root / target.package_dir / name for name in target.generated_files]
    missing = [str(p) for p in produced if not p.exists()]
    if missing:
        raise GenerationError(f"protoc did not write {', '.join(missing)}")
    (out_root / target.package_dir / STAMP_FILE).write_text(stamp_text(tool_versions(), target))
    return [*produced, out_root / target.package_dir / STAMP_FILE]


def generate(root: Path = ROOT, targets: Sequence[Target] = TARGETS) -> list[Path]:
    """Regenerate the checked-in files of every target under ``root / target.package_dir`` (via a temporary
    folder: all or nothing), and copy each packaged .proto file (the API's to ``root / PACKAGED_PROTO``)."""
    written = []
    with tempfile.TemporaryDirectory(prefix="pokdeng-gen-") as tmp:
        produced = [(target, generate_into(Path(tmp), target)) for target in targets]
        for target, paths in produced:
            directory = root / target.package_dir
            directory.mkdir(parents=True, exist_ok=True)
            for path in paths:
                destination = directory / path.name
                shutil.copyfile(path, destination)
                written.append(destination)
    for target in targets:
        if target.packaged_proto is not None:
            shutil.copyfile(PROTO_ROOT / target.proto_file, root / target.packaged_proto)
            written.append(root / target.packaged_proto)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokdeng_service.api.generate",
        description="Regenerate "
        + ", ".join(f"{t.package_dir.as_posix()}/ from proto/{t.proto_file.as_posix()}" for t in TARGETS)
        + ".",
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
