"""``pokdeng demo`` plays every profile through a real gRPC server, checks the money and one round, keeps its
store where the user can find it, and prints the commands to try next, which work as printed."""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest

from pokdeng_service.cli import EXIT_OK, main
from pokdeng_service.cli.console import Console
from pokdeng_service.cli.demo import DEFAULT_DB, demo_db, run_demo


def test_demo_plays_every_profile_verifies_and_says_what_to_try_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    buffer = io.StringIO()
    assert run_demo(rounds=2, seed=3, console=Console(file=buffer, width=200)) == 0
    out = buffer.getvalue()
    for profile in ("classic", "ante", "room", "kingmaker"):
        assert profile in out
    assert "= THB 0.00 balanced" in out
    assert "verified offline: PASS" in out and "anchored" in out
    db = tmp_path / DEFAULT_DB
    assert db.is_file() and db.with_name(db.name + ".vault-key").is_file()  # kept, not deleted on exit
    assert f"the store is kept in {db}" in out
    commands = [line.strip() for line in out.splitlines() if line.startswith("  pokdeng ")]
    assert [c.split()[1] for c in commands] == ["replay", "verify", "verifier-page", "verify", "recall"]
    capsys.readouterr()
    for command in commands:  # each works as printed
        assert main(shlex.split(command)[1:]) == EXIT_OK, command
    printed = capsys.readouterr().out
    assert "PASS  bundle of round" in printed and "ok   anchor: Ed25519 signature" in printed
    (page,) = [Path(w) for w in shlex.split(commands[0]) if w.endswith(".html")]
    text = page.read_text(encoding="utf-8")
    assert re.search(r"SETTLED|VOIDED", text) and "data-bundle=" in text
    assert (tmp_path / "pokdeng-demo-verifier.html").is_file()  # (a name .gitignore knows: the demo's files)


def test_a_second_demo_takes_a_new_store(tmp_path: Path) -> None:
    assert demo_db(None, tmp_path) == tmp_path / DEFAULT_DB
    (tmp_path / DEFAULT_DB).write_bytes(b"")
    assert demo_db(None, tmp_path) == tmp_path / "pokdeng-demo-2.sqlite"
    assert demo_db("mine.sqlite", tmp_path) == Path("mine.sqlite")
