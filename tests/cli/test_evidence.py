"""The audit tools are safe on evidence: ``pokdeng verify``, ``replay``, ``export`` and ``recall`` open
the store read only, create nothing, need no vault key for closed rounds, and report a missing,
unreadable or unreachable store in one line with exit code 4.
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import PersistenceError

from pokdeng_service.application import PokdengApp
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, main
from pokdeng_service.store.readonly import READ_ONLY_OPTIONS
from pokdeng_testkit.pgserver import PostgresServerInfo
from pokdeng_testkit.ports import free_port

from ..service import play
from .stores import Played, play_rounds, run_cli, snapshot, world_readable_folder

pytestmark = pytest.mark.usefixtures("no_store_settings")  # (tests/conftest.py)


@pytest.fixture
def played(tmp_path: Path) -> Played:
    """A SQLite store made the embedded way (its vault key beside it), closed."""
    db = tmp_path / "live" / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    closed, open_round = play_rounds(service.apps[0])
    service.close()
    return Played(db, closed, open_round)


def _tools(db: str, played: Played) -> list[list[str]]:
    closed = played.closed[0]
    return [
        ["verify", "--all", "--quiet", "--db", db],
        ["verify", closed, "--db", db],
        ["replay", closed, "--db", db],
        ["export", closed, "--db", db],
        ["recall", "--player", "ann", "--db", db],
    ]


def test_each_tool_on_a_wrong_path_says_no_such_database_and_creates_nothing(
    played: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(tmp_path)
    for wrong in (tmp_path / "pokdeng.sqlite", tmp_path / "no" / "such" / "folder.sqlite"):
        for argv in _tools(str(wrong), played):
            assert main(argv) == EXIT_UNAVAILABLE, argv
            err = capsys.readouterr().err
            assert err == f"pokdeng: no such database: {wrong}\n", argv
    assert snapshot(tmp_path) == before  # no database file, no key, no folder


def test_a_file_that_is_no_store_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, but long enough to have a header of a hundred bytes " * 3)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    before = snapshot(tmp_path)
    assert main(["verify", "--all", "--db", str(text)]) == EXIT_UNAVAILABLE
    assert capsys.readouterr().err == f"pokdeng: not a SQLite database: {text}\n"
    assert main(["verify", "--all", "--db", str(empty)]) == EXIT_UNAVAILABLE
    assert capsys.readouterr().err == f"pokdeng: not a pokdeng store: {empty} (no stored_events table)\n"
    assert snapshot(tmp_path) == before


@pytest.fixture
def read_only_copy(played: Played) -> Iterator[Path]:
    """The database file alone (no key, no WAL) in a folder of its own, file and folder read-only;
    the folder is reachable by user ``nobody`` (the tools run as it when the tests run as root)."""
    outer = world_readable_folder()
    folder = outer / "evidence"
    folder.mkdir()
    copy = folder / "pokdeng.sqlite"
    shutil.copyfile(played.db, copy)
    copy.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield copy
    finally:
        folder.chmod(0o755)
        shutil.rmtree(outer, ignore_errors=True)


def test_each_tool_works_on_a_read_only_copy_for_closed_rounds(
    played: Played, read_only_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = read_only_copy.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o555 and stat.S_IMODE(read_only_copy.stat().st_mode) == 0o444
    before = snapshot(folder)
    for original, argv in zip(_tools(str(played.db), played), _tools(str(read_only_copy), played), strict=True):
        # in this process first: then every module the (unprivileged) child needs is imported already
        assert main(original) == EXIT_OK, original
        here = capsys.readouterr().out
        there = run_cli(argv, unprivileged=True)
        assert there.code == EXIT_OK and there.err == "", (argv, there)
        assert there.out == here
    assert "3 passed, 0 failed" in run_cli(_tools(str(read_only_copy), played)[0], unprivileged=True).out
    # an open round's seed is sealed: without the key that check is refused, and says why
    refused = run_cli(["verify", played.open_round, "--db", str(read_only_copy)], unprivileged=True)
    assert refused.code == EXIT_USAGE
    assert f"round {played.open_round} is open" in refused.err and "vault key" in refused.err
    assert len(refused.err.splitlines()) == 1
    assert snapshot(folder) == before  # nothing written, nothing created (no -wal, no -shm, no key)


def test_closed_rounds_verify_without_a_vault_key(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    key = played.db.with_name(played.db.name + ".vault-key")
    saved = key.read_text()
    key.unlink()
    db = str(played.db)
    assert main(["verify", "--all", "--db", db]) == EXIT_OK
    assert "3 passed, 0 failed" in capsys.readouterr().out
    assert main(["replay", played.closed[1], "--db", db]) == EXIT_OK
    assert main(["export", played.closed[2], "--db", db, "-o", str(played.db.parent / "b.json")]) == EXIT_OK
    capsys.readouterr()
    assert main(["verify", played.open_round, "--db", db]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"round {played.open_round} is open" in err and f"vault key file {key} not found" in err
    assert not key.exists()  # never made by a tool
    # with the key back, the operator's check of the open round unseals its seed, still read only
    key.write_text(saved)
    key.chmod(0o600)
    assert main(["verify", played.open_round, "--db", db]) == EXIT_OK  # (an open round: nothing settled yet)
    out = capsys.readouterr().out
    assert "ok   commitment" in out and "ok   replay" in out


def test_a_read_only_store_refuses_writes(played: Played) -> None:
    before = snapshot(played.db.parent)
    service = PartitionedPokdeng.open_read_only(StoreConfig.from_args(db=str(played.db)))
    try:
        app: PokdengApp = service.apps[0]
        assert app.get_wallet("ann").balance > 0
        with pytest.raises((PersistenceError, sqlite3.Error)):
            app.open_wallet("w-1", "eve")
    finally:
        service.close()
    after = snapshot(played.db.parent)
    assert {k: v for k, v in after.items() if not k.endswith(("-wal", "-shm"))} == before


def test_an_unreachable_postgres_is_one_line_and_exit_4(
    played: Played, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    port = free_port()
    url = f"postgresql://pokdeng:pokdeng@127.0.0.1:{port}/pokdeng"
    for argv in _tools("unused", played):
        argv = [a for a in argv if a not in ("--db", "unused")] + ["--postgres-url", url]
        assert main(argv) == EXIT_UNAVAILABLE, argv
        err = capsys.readouterr().err
        assert err.startswith(f"pokdeng: cannot reach PostgreSQL 127.0.0.1:{port}/pokdeng: "), err
        assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert snapshot(tmp_path) == before  # no ./pokdeng.vault-key


@pytest.mark.postgres
def test_postgres_tools_read_only_without_a_key(
    make_postgres_database: Callable[[], PostgresServerInfo],
    capsys: pytest.CaptureFixture[str],
) -> None:
    database: PostgresServerInfo = make_postgres_database()
    url = database.url + (f"?schema={database.schema}" if database.schema else "")
    app = play.make_app(StoreConfig(kind="postgres", postgres_url=url).env(0))
    try:
        closed, _open_round = play_rounds(app)
    finally:
        app.close()
    assert main(["verify", "--all", "--postgres-url", url]) == EXIT_OK  # no vault key anywhere
    assert f"{len(closed)} passed, 0 failed" in capsys.readouterr().out
    assert main(["recall", "--player", "ann", "--postgres-url", url]) == EXIT_OK
    service = PartitionedPokdeng.open_read_only(StoreConfig(kind="postgres", postgres_url=url))
    try:
        datastore = service.apps[0].factory.datastore  # type: ignore[attr-defined]
        assert datastore.pool.kwargs["options"] == READ_ONLY_OPTIONS
        with datastore.transaction(commit=False) as cursor:
            cursor.execute("SHOW default_transaction_read_only")
            assert cursor.fetchone()["default_transaction_read_only"] == "on"
        with pytest.raises(PersistenceError, match="read-only transaction"):
            service.apps[0].open_wallet("w-1", "eve")
    finally:
        service.close()
    empty = make_postgres_database()
    empty_url = empty.url + (f"?schema={empty.schema}" if empty.schema else "")
    assert main(["verify", "--all", "--postgres-url", empty_url]) == EXIT_UNAVAILABLE
    assert "not a pokdeng store" in capsys.readouterr().err
    if not database.schema:
        missing = database.with_dbname("pokdeng_no_such_db").url
        assert main(["verify", "--all", "--postgres-url", missing]) == EXIT_UNAVAILABLE
        assert capsys.readouterr().err.startswith("pokdeng: no such database: PostgreSQL")
