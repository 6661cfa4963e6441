"""``pokdeng auth new --tokens FILE``: the token printed once, its entry added to the token file, which is made
private (mode 0600) and stays private; a file open to others is refused (exit 2) and left as it was."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pokdeng_service.api.auth import TokenStore
from pokdeng_service.application.principal import Role
from pokdeng_service.cli import EXIT_OK, EXIT_USAGE, main


def _token(out: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith("token ")]
    return line.rsplit(": ", 1)[1]


@pytest.mark.parametrize("name", ["tokens.toml", "tokens.json"])
def test_auth_new_adds_the_entry_to_a_private_token_file(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / name
    assert main(["auth", "new", "--role", "player", "--player", "alice", "--tokens", str(file)]) == EXIT_OK
    alice = _token(capsys.readouterr().out)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert main(["auth", "new", "--role", "auditor", "--name", "regulator", "--tokens", str(file)]) == EXIT_OK
    out = capsys.readouterr().out
    auditor = _token(out)
    assert f"added to the token file {file}" in out and auditor not in file.read_text()  # only its digest
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    store = TokenStore.from_file(file)  # what `pokdeng serve --tokens FILE` reads
    assert len(store) == 2
    first, second = store.authenticate(alice), store.authenticate(auditor)
    assert first is not None and first.role is Role.PLAYER and first.player == "alice"
    assert second is not None and second.role is Role.AUDITOR
    assert [p.name for p in tmp_path.iterdir()] == [name]  # (no temporary file left beside it)


def test_a_toml_token_file_keeps_its_comments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "tokens.toml"
    file.write_text('# the operators of table 7\n[[tokens]]\ntoken_sha256 = "' + "a" * 64 + '"\nrole = "operator"\n')
    file.chmod(0o600)
    assert main(["auth", "new", "--role", "operator", "--tokens", str(file)]) == EXIT_OK
    assert file.read_text().startswith("# the operators of table 7\n") and len(TokenStore.from_file(file)) == 2


def test_a_token_file_open_to_others_or_a_bad_entry_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "tokens.json"
    file.write_text('{"tokens": [{"token_sha256": "' + "b" * 64 + '", "role": "auditor"}]}\n')
    os.chmod(file, 0o644)
    before = file.read_bytes()
    assert main(["auth", "new", "--role", "operator", "--tokens", str(file)]) == EXIT_USAGE
    assert "chmod 600" in capsys.readouterr().err and file.read_bytes() == before
    fresh = tmp_path / "new.json"
    assert main(["auth", "new", "--role", "player", "--tokens", str(fresh)]) == EXIT_USAGE  # (a player needs --player)
    assert not fresh.exists()
    assert main(["auth", "new", "--role", "operator", "--tokens", str(tmp_path / "no" / "t.json")]) == EXIT_USAGE
    assert "cannot write token file" in capsys.readouterr().err
