"""``pokdeng serve`` on a port in use: refused before anything is written.

Found from the outside: on a port another process held, serve took the store's lock, made the vault
key, printed a development token and only then exited 4 ("store unreachable"). Now both ports (gRPC and
metrics) are checked first: exit 2, "port in use", and the folder is as it was."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pokdeng_service.api.listening import PortInUse, check_port
from pokdeng_service.cli import EXIT_USAGE, main


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another socket listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("POKDENG_VAULT_KEY", "POKDENG_VAULT_KEY_FILE", "POKDENG_DB", "POKDENG_POSTGRES_URL", "POKDENG_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("POKDENG_METRICS_PORT", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("which", ["--port", "--metrics-port"])
def test_serve_on_a_port_in_use_exits_2_and_writes_nothing(
    which: str, taken: int, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--db", str(folder / "pokdeng.sqlite"), "--port", "0", which, str(taken)]
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert f"port in use: 127.0.0.1:{taken}" in captured.err
    assert ("--metrics-port" if which == "--metrics-port" else "the gRPC port") in captured.err
    assert "Bearer" not in captured.err + captured.out  # (no development token printed)
    assert list(folder.iterdir()) == []  # no store, no vault key, no lock


def test_a_free_port_and_port_0_pass_the_check(taken: int) -> None:
    check_port("127.0.0.1", 0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = int(probe.getsockname()[1])
    check_port("127.0.0.1", free)
    with pytest.raises(PortInUse, match="port in use"):
        check_port("localhost", taken)
    with pytest.raises(PortInUse, match=r"cannot listen on 203\.0\.113\.7"):  # (an address of no interface here)
        check_port("203.0.113.7", free)
