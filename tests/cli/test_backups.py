"""Backups, restores and the rebuild of the read models: ``pokdeng backup`` while rounds are played,
``pokdeng restore`` into a new store, ``pokdeng verify --all`` on the copy; ``pokdeng
rebuild-read-models`` from the events.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_FAILED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, main
from pokdeng_service.compose import Deployment
from pokdeng_service.readmodels import ReadModels
from pokdeng_testkit.pgserver import PostgresServerInfo
from tests.needs import unavailable

from ..service import play
from .stores import Player, play_rounds, snapshot

pytestmark = pytest.mark.usefixtures("no_store_settings")  # (tests/conftest.py)


def _closed_rounds(out: str) -> int:
    """N of the line ``N passed, 0 failed`` of ``pokdeng verify`` (the rounds' tally)."""
    tally = [line for line in out.splitlines() if re.fullmatch(r"\d+ passed, \d+ failed", line)]
    assert len(tally) == 1 and tally[0].endswith(" passed, 0 failed"), out
    return int(tally[0].split()[0])


def test_sqlite_backup_while_rounds_are_played_restores_and_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "live" / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    player = Player(service.apps[0])
    try:
        closed, _open_round = play_rounds(service.apps[0])
        player.start()
        player.wait_for(2)
        backups = []
        (tmp_path / "backups").mkdir()  # (a backup's folder must exist: one that does not is bad usage, exit 2)
        for n in range(3):  # each taken while the player's thread writes
            out = tmp_path / "backups" / f"pokdeng-{n}.sqlite"
            started = player.rounds
            assert player.alive
            assert main(["backup", "--db", str(db), str(out)]) == EXIT_OK
            assert f"backed up {db} to {out} (" in capsys.readouterr().out
            backups.append((out, started))
            player.wait_for(started + 1)
        played = player.stop()
    finally:
        player.stop()
        service.close()
    assert played > backups[0][1]
    # one self-contained file each (no -wal, no partial file left)
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == [f"pokdeng-{n}.sqlite" for n in range(3)]
    for n, (out, started) in enumerate(backups):
        copy = tmp_path / "restored" / f"r{n}.sqlite"
        assert main(["restore", str(out), "--db", str(copy)]) == EXIT_OK
        capsys.readouterr()
        assert main(["verify", "--all", "--quiet", "--db", str(copy)]) == EXIT_OK  # no vault key needed
        verified = _closed_rounds(capsys.readouterr().out)
        assert len(closed) + started <= verified <= len(closed) + played
    # neither overwrites: a backup or a restore goes to a new file
    assert main(["backup", "--db", str(db), str(backups[0][0])]) == EXIT_USAGE
    assert main(["restore", str(backups[0][0]), "--db", str(db)]) == EXIT_USAGE
    assert "exists" in capsys.readouterr().err
    before = snapshot(tmp_path)
    assert main(["backup", "--db", str(tmp_path / "nope.sqlite"), str(tmp_path / "b.sqlite")]) == EXIT_UNAVAILABLE
    assert main(["restore", str(tmp_path / "nope.sqlite"), "--db", str(tmp_path / "c.sqlite")]) == EXIT_UNAVAILABLE
    assert capsys.readouterr().err.count("no such database") == 2
    assert snapshot(tmp_path) == before


def test_a_restore_is_locked_against_a_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    play_rounds(service.apps[0], rounds=1)
    service.close()
    assert main(["backup", "--db", str(db), str(tmp_path / "b.sqlite")]) == EXIT_OK
    target = tmp_path / "new.sqlite"
    server = Deployment.open(StoreConfig.from_args(db=str(target)), clocks=False, read_models=False)
    try:  # a server that already runs on the (new, empty) target path: the restore does not write under it
        target.unlink()
        assert main(["restore", str(tmp_path / "b.sqlite"), "--db", str(target)]) == EXIT_UNAVAILABLE
        assert "in use by another pokdeng process" in capsys.readouterr().err
    finally:
        server.close()


@pytest.mark.postgres
def test_postgres_backup_while_rounds_are_played_restores_and_verifies(
    make_postgres_database: Callable[[], PostgresServerInfo], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_postgres_database()
    if source.schema:  # only on an outside server (POKDENG_TEST_POSTGRES_URL); CI starts its own cluster
        unavailable("a dump restores its schemas by name: the session isolates tests by schema on this server")
    url = source.url
    service = PartitionedPokdeng.open(StoreConfig(kind="postgres", postgres_url=url, vault_key=play.VAULT_KEY))
    player = Player(service.apps[0])
    try:
        closed, _open_round = play_rounds(service.apps[0])
        player.start()
        player.wait_for(2)
        started = player.rounds
        out = tmp_path / "pokdeng.dump"
        assert main(["backup", "--postgres-url", url, str(out)]) == EXIT_OK
        assert "pg_dump custom format" in capsys.readouterr().out
        assert player.alive
        player.wait_for(started + 1)
        played = player.stop()
    finally:
        player.stop()
        service.close()
    target = make_postgres_database().url
    assert main(["restore", str(out), "--postgres-url", target]) == EXIT_OK
    capsys.readouterr()
    assert main(["verify", "--all", "--quiet", "--postgres-url", target]) == EXIT_OK  # no vault key given
    verified = _closed_rounds(capsys.readouterr().out)
    assert len(closed) + started <= verified <= len(closed) + played
    # a store is never restored over: the target must be a new, empty database
    assert main(["restore", str(out), "--postgres-url", target]) == EXIT_UNAVAILABLE
    assert "already holds a pokdeng store" in capsys.readouterr().err


def test_rebuild_read_models_from_the_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pokdeng.sqlite"
    config = StoreConfig.from_args(db=str(db))
    service = PartitionedPokdeng.open(config)
    try:
        play_rounds(service.apps[0], rounds=4)
        with ReadModels(config.env(0)) as models:
            models.catch_up(service.apps[0])
            before = (models.last_rounds(player="ann"), models.wallet_balance("ann"), models.house_totals())
            position = models.position()
    finally:
        service.close()
    with sqlite3.connect(db) as connection:  # views lost or damaged (say, by a faulty view change)
        connection.execute("DELETE FROM pokdeng_round_history")
        connection.execute("UPDATE pokdeng_wallets SET balance = balance + 1")
    with ReadModels(config.env(0)) as models:
        assert models.last_rounds(player="ann") == () and models.wallet_balance("ann") != before[1]
    assert main(["rebuild-read-models", "--db", str(db)]) == EXIT_OK
    assert f"rebuilt the read models of partition 0 from {position} events" in capsys.readouterr().out
    with ReadModels(config.env(0)) as models:
        assert (models.last_rounds(player="ann"), models.wallet_balance("ann"), models.house_totals()) == before
        assert models.position() == position
    # not under a running server, and never on a store that is not there
    server = Deployment.open(config, clocks=False, read_models=False)
    try:
        assert main(["rebuild-read-models", "--db", str(db)]) == EXIT_UNAVAILABLE
        assert "in use by another pokdeng process" in capsys.readouterr().err
    finally:
        server.close()
    before_files = snapshot(tmp_path)
    assert main(["rebuild-read-models", "--db", str(tmp_path / "nope.sqlite")]) == EXIT_UNAVAILABLE
    assert f"no such database: {tmp_path / 'nope.sqlite'}" in capsys.readouterr().err
    assert snapshot(tmp_path) == before_files


def test_a_store_whose_events_were_edited_is_named_by_restore_and_refused_by_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``restore`` verifies what it restored and says so (exit 1 when it fails); ``rebuild-read-models`` refuses
    to fold views from a store that fails verification, unless ``--force``."""
    db = tmp_path / "pokdeng.sqlite"
    config = StoreConfig.from_args(db=str(db))
    service = PartitionedPokdeng.open(config)
    try:
        play_rounds(service.apps[0], rounds=2)
    finally:
        service.close()
    assert main(["backup", "--db", str(db), str(tmp_path / "good.sqlite")]) == EXIT_OK
    assert main(["restore", str(tmp_path / "good.sqlite"), "--db", str(tmp_path / "copy.sqlite")]) == EXIT_OK
    assert "verified the restored store: every stream passes" in capsys.readouterr().out
    with sqlite3.connect(db) as connection:  # a deposit's amount changed in place
        row = connection.execute(
            "SELECT rowid, state FROM stored_events WHERE topic LIKE '%Wallet.Deposited'"
        ).fetchone()
        edited = row[1].replace(b'"amount":', b'"amount":1', 1)
        assert edited != row[1]
        connection.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (edited, row[0]))
    assert main(["backup", "--db", str(db), str(tmp_path / "bad.sqlite")]) == EXIT_OK
    assert main(["restore", str(tmp_path / "bad.sqlite"), "--db", str(tmp_path / "copy2.sqlite")]) == EXIT_FAILED
    assert "the restored store fails verification" in capsys.readouterr().err
    assert main(["rebuild-read-models", "--db", str(db)]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "the store fails verification" in err and "nothing rebuilt" in err and "wallet" in err
    assert main(["rebuild-read-models", "--db", str(db), "--force"]) == EXIT_OK
    assert "rebuilding anyway (--force)" in capsys.readouterr().err


@pytest.mark.postgres
def test_on_postgres_the_layout_is_kept_and_the_views_are_checked_against_the_record(
    make_postgres_database: Callable[[], PostgresServerInfo], capsys: pytest.CaptureFixture[str]
) -> None:
    """The two store-side checks of the hardening on PostgreSQL: the layout recorded at the first start refuses
    another ``--partitions``, and ``verify --all`` names a read-model row that the events do not give."""
    import psycopg

    from pokdeng_service.application.config import ConfigError
    from pokdeng_service.store.bounded import connect_kwargs

    url = make_postgres_database().url
    config = StoreConfig(kind="postgres", postgres_url=url, vault_key=play.VAULT_KEY)
    service = PartitionedPokdeng.open(config)
    try:
        play_rounds(service.apps[0], rounds=2)
        with ReadModels(config.env(0)) as models:
            models.catch_up(service.apps[0])
    finally:
        service.close()
    with pytest.raises(ConfigError, match="partition 0 of 1"):
        PartitionedPokdeng.open(StoreConfig(kind="postgres", postgres_url=url, vault_key=play.VAULT_KEY, partitions=2))
    assert main(["verify", "--all", "--quiet", "--postgres-url", url]) == EXIT_OK
    env = config.env(0)
    table = f'"{env["POSTGRES_SCHEMA"]}".pokdeng_wallets' if env.get("POSTGRES_SCHEMA") else "pokdeng_wallets"
    with psycopg.connect(**connect_kwargs(env), autocommit=True) as conn:
        conn.execute(f"UPDATE {table} SET balance = 77777777 WHERE wallet_id = 'ann'")
    capsys.readouterr()
    assert main(["verify", "--all", "--quiet", "--postgres-url", url]) == EXIT_FAILED
    assert "wallet 'ann': the views say balance 77777777" in capsys.readouterr().out
