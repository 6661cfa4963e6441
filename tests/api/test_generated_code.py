"""The generated gRPC code is current: regenerating from proto/ gives the checked-in files, byte for byte.

Also: every service, method, message, field, enum and enum value in the .proto is documented. Each
generated package (``generate.TARGETS``: the API, and the platform wallet protocol of docs/wallet.md)
is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from pokdeng_service.api import generate as gen

REGENERATE = "python -m pokdeng_service.api.generate"


def _normalised(data: bytes) -> list[bytes]:
    """The file's lines without trailing whitespace (the only normalisation allowed)."""
    return [line.rstrip() for line in data.rstrip().splitlines()]


TARGETS = pytest.mark.parametrize("target", gen.TARGETS, ids=lambda t: t.package_dir.name if t is gen.API else "wallet")


@TARGETS
def test_generator_versions_match_the_checked_in_code(target: gen.Target) -> None:
    recorded = gen.read_stamp(gen.ROOT / target.package_dir / gen.STAMP_FILE)
    installed = gen.tool_versions()
    differing = {
        name: (recorded.get(name), installed[name]) for name in installed if recorded.get(name) != installed[name]
    }
    if differing:
        detail = ", ".join(
            f"{name}: checked in {old}, installed {new}" for name, (old, new) in sorted(differing.items())
        )
        pytest.fail(
            f"the generated API code was made with other tool versions ({detail}). "
            f"Install the recorded versions, or run `{REGENERATE}` and commit the result.",
            pytrace=False,
        )


@TARGETS
def test_regenerating_gives_the_checked_in_files(tmp_path: Path, target: gen.Target) -> None:
    produced = gen.generate_into(tmp_path, target)
    assert sorted(p.name for p in produced) == sorted((*target.generated_files, gen.STAMP_FILE))
    stale = []
    for path in produced:
        checked_in = gen.ROOT / target.package_dir / path.name
        if not checked_in.exists() or _normalised(checked_in.read_bytes()) != _normalised(path.read_bytes()):
            stale.append(path.name)
    if stale:
        pytest.fail(
            f"{', '.join(stale)} in {target.package_dir.as_posix()} differ from what proto/ generates: "
            f"run `{REGENERATE}` and commit the result.",
            pytrace=False,
        )


def test_generated_modules_import_and_name_the_package() -> None:
    from pokdeng_client.v1 import pokdeng_pb2, pokdeng_pb2_grpc

    assert pokdeng_pb2.DESCRIPTOR.package == "pokdeng.v1"
    assert set(pokdeng_pb2.DESCRIPTOR.services_by_name) == {
        "WalletService",
        "TableService",
        "RoundService",
        "AuditService",
        "EventService",
    }
    assert hasattr(pokdeng_pb2_grpc, "add_TableServiceServicer_to_server")


def test_generated_wallet_modules_import_and_name_the_package() -> None:
    from pokdeng_service.wallet.v1 import wallet_pb2, wallet_pb2_grpc

    assert wallet_pb2.DESCRIPTOR.package == "pokdeng.wallet.v1"
    assert set(wallet_pb2.DESCRIPTOR.services_by_name) == {"PlatformWalletService"}
    assert hasattr(wallet_pb2_grpc, "add_PlatformWalletServiceServicer_to_server")


def _descriptor_with_comments(tmp_path: Path, target: gen.Target = gen.API) -> descriptor_pb2.FileDescriptorSet:
    from grpc_tools import protoc  # type: ignore[import-untyped]

    out = tmp_path / "pokdeng.desc"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={gen.PROTO_ROOT}",
            f"--proto_path={Path(protoc.__file__).parent / '_proto'}",
            "--include_source_info",
            f"--descriptor_set_out={out}",
            target.proto_file.as_posix(),
        ]
    )
    assert code == 0
    return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


@TARGETS
def test_every_element_of_the_proto_is_documented(tmp_path: Path, target: gen.Target) -> None:
    (file,) = _descriptor_with_comments(tmp_path, target).file
    documented = {
        tuple(location.path) for location in file.source_code_info.location if location.leading_comments.strip()
    }
    missing: list[str] = []

    def need(path: tuple[int, ...], name: str) -> None:
        if path not in documented:
            missing.append(name)

    # FileDescriptorProto field numbers: message_type 4, enum_type 5, service 6;
    # DescriptorProto.field 2, nested enum 4; EnumDescriptorProto.value 2; ServiceDescriptorProto.method 2.
    for m, message in enumerate(file.message_type):
        need((4, m), message.name)
        for f, field in enumerate(message.field):
            need((4, m, 2, f), f"{message.name}.{field.name}")
    for e, enum in enumerate(file.enum_type):
        need((5, e), enum.name)
        for v, value in enumerate(enum.value):
            need((5, e, 2, v), f"{enum.name}.{value.name}")
    for s, service in enumerate(file.service):
        need((6, s), service.name)
        for r, method in enumerate(service.method):
            need((6, s, 2, r), f"{service.name}.{method.name}")
    assert not missing, f"undocumented in proto/{target.proto_file.as_posix()}: {', '.join(missing)}"


def test_every_command_carries_a_request_id(tmp_path: Path) -> None:
    from pokdeng_client.v1 import pokdeng_pb2

    reads = {
        "GetWallet",
        "ListStatementEntries",
        "GetTable",
        "ListTables",
        "WatchTable",
        "GetRound",
        "ListRounds",
        "GetLegalCommands",
        "WatchRound",
    }
    reads |= {"ReplayRound", "VerifyRound", "ExportRound", "GetInclusionProof", "GetSignedTreeHead"}
    reads |= {"GetConsistencyProof", "SubscribeEvents", "ListWallets"}
    for service in pokdeng_pb2.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            fields = method.input_type.fields_by_name
            if method.name in reads:
                assert "request_id" not in fields, method.full_name
            else:
                assert "request_id" in fields, method.full_name
                assert fields["request_id"].number == 1, method.full_name
