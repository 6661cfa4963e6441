"""The ``pokdeng`` command: replay, verify, export, recall, with exit codes scripts can use."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pokdeng_service import audit
from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_UNANCHORED, EXIT_USAGE, main
from pokdeng_service.store.aggregates import wallet_uuid

from ..service import play


@pytest.fixture
def played(tmp_path: Path) -> tuple[Path, list[str]]:
    """A SQLite store with three closed kingmaker rounds and one classic round left open."""
    db = tmp_path / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    app = service.apps[0]
    d = play.Driver(app, chooser=play.Chooser(random.Random(1)))
    play.open_wallets(d, ["ann", "ben"])
    play.open_table(d, "km", "kingmaker", [(1, "ann"), (2, "ben")])
    rounds = []
    for _ in range(3):
        round_id = play.start_round(d, "km", "cli")
        play.seat_bets(d, round_id, 300)
        play.drive_round(d, round_id)
        rounds.append(round_id)
    play.open_table(d, "open", "classic", [(1, "ann")])
    open_round = play.start_round(d, "open")
    play.seat_bets(d, open_round, 100)
    service.close()
    return db, rounds


def test_replay_prints_the_round_and_writes_html(
    played: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, rounds = played
    page = tmp_path / "round.html"
    assert main(["replay", rounds[0], "--db", str(db), "--html", str(page)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "deal —" in out and "PASS" in out and "server seed revealed" in out
    text = page.read_text()
    assert text.startswith("<!doctype html>") and rounds[0] in text and "cards_dealt" in text


def test_verify_rounds_all_and_bundle(
    played: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, rounds = played
    assert main(["verify", rounds[1], "--db", str(db)]) == EXIT_OK
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_OK
    assert "3 passed, 0 failed" in capsys.readouterr().out
    bundle = tmp_path / "b.json"
    assert main(["export", rounds[2], "--db", str(db), "-o", str(bundle)]) == EXIT_OK
    assert main(["verify", "--bundle", str(bundle), "--allow-unanchored"]) == EXIT_OK
    assert main(["verify", str(bundle)]) == EXIT_UNANCHORED  # `pokdeng verify BUNDLE`: offline, no database, no key
    assert "UNANCHORED  bundle of round" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "missing.json")]) == EXIT_USAGE
    raw = bytearray(bundle.read_bytes())
    raw[len(raw) // 3] ^= 0x01
    bundle.write_bytes(bytes(raw))
    assert main(["verify", "--bundle", str(bundle)]) == EXIT_FAILED
    assert main(["verify", str(bundle), rounds[1], "--db", str(db)]) == EXIT_FAILED
    assert "1 passed, 1 failed" in capsys.readouterr().out
    assert audit.verify_bundle(bytes(raw)).ok is False


def test_recall_lists_the_last_rounds_in_play_order(
    played: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, rounds = played
    assert main(["recall", "--player", "ann", "--limit", "2", "--db", str(db)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.index(f"Round {rounds[1]}") < out.index(f"Round {rounds[2]}")
    assert f"Round {rounds[0]} " not in out and "2 round(s)" in out


def test_exit_codes(played: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    db, rounds = played
    assert main(["replay", "no-such#1", "--db", str(db)]) == EXIT_REFUSED
    assert "not found" in capsys.readouterr().err
    assert main(["export", "open#1", "--db", str(db)]) == EXIT_REFUSED  # the seed is still secret
    assert main(["verify", "--db", str(db)]) == EXIT_USAGE
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    # (found from the outside) an id that is no round's is a usage error that says the form, not "not found";
    # a file in a folder that does not exist is a usage error before any work, not "store unreachable" (4)
    for command in (["replay", "km"], ["export", "km#"], ["verify", "km#0"]):
        assert main([*command, "--db", str(db)]) == EXIT_USAGE, command
        assert "is not a round id: the round's id, TABLE#N" in capsys.readouterr().err
    nowhere = str(db.parent / "missing" / "x.html")
    for command in (["verifier-page", nowhere], ["replay", rounds[0], "--html", nowhere, "--db", str(db)]):
        assert main(command) == EXIT_USAGE, command
        assert "no such folder" in capsys.readouterr().err
    assert main(["export", rounds[0], "-o", nowhere, "--db", str(db)]) == EXIT_USAGE
    assert main(["recall", "--table", "no-such", "--db", str(db)]) == EXIT_REFUSED  # (not "0 round(s)", exit 0)
    assert "not found" in capsys.readouterr().err


def test_replay_export_and_verify_find_a_round_in_its_partition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found from the outside: on a store of two partitions, `replay` and `export` failed with a traceback
    (AttributeError) for every round; only `verify` looked in the round's partition."""
    db = tmp_path / "p.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db), partitions=2))
    shards = {service.partition(f"{s}/t", "table"): s for s in "abcdefghijklmnop"}
    assert set(shards) == {0, 1}
    rounds = []
    for partition, shard in sorted(shards.items()):
        d = play.Driver(service.apps[partition], prefix=f"p{partition}")
        play.open_wallets(d, [f"{shard}/ann"])
        play.open_table(d, f"{shard}/t", "classic", [(1, f"{shard}/ann")])
        round_id = play.start_round(d, f"{shard}/t")
        play.seat_bets(d, round_id, 100)
        play.drive_round(d, round_id)
        rounds.append(round_id)
    service.close()
    for round_id in rounds:
        store = ["--db", str(db), "--partitions", "2"]
        page, bundle = tmp_path / "r.html", tmp_path / "r.json"
        assert main(["replay", round_id, *store, "--html", str(page)]) == EXIT_OK
        assert round_id in page.read_text()
        assert main(["export", round_id, *store, "-o", str(bundle)]) == EXIT_OK
        assert main(["verify", str(bundle), "--allow-unanchored"]) == EXIT_OK
        assert main(["verify", round_id, *store]) == EXIT_OK
    assert "Traceback" not in capsys.readouterr().err
    assert main(["verify", "--all", "--quiet", "--db", str(db), "--partitions", "2"]) == EXIT_OK
    # given another layout than the one the store recorded at its first start, a tool refuses to read it
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_USAGE
    assert "partition 0 of 2 (recorded at its first start)" in capsys.readouterr().err


def test_a_store_served_with_another_layout_is_refused_and_verify_finds_a_misplaced_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store laid out as one partition and given as two would answer NOT_FOUND for its wallets and take a
    second OpenWallet of the same id: its layout is recorded at its first start, and a server or a tool given
    another refuses with the layout named. ``verify --all`` checks every stream lives where its key names."""
    db = tmp_path / "one.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db), partitions=1))
    play.open_wallets(play.Driver(service.apps[0]), [f"{s}/ann" for s in "abcdefgh"])
    service.close()
    with pytest.raises(ConfigError, match="partition 0 of 1"):
        PartitionedPokdeng.open(StoreConfig.from_args(db=str(db), partitions=2))
    assert main(["verify", "--all", "--quiet", "--db", str(db), "--partitions", "2"]) == EXIT_USAGE
    assert "serve it with --partitions 1" in capsys.readouterr().err
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_OK
    # a wallet stream copied into the partition its key does not name: verify --all says so
    two = tmp_path / "two.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(two), partitions=2))
    shard = next(s for s in "abcdefghijklmnop" if service.partition(f"{s}/bob", "wallet") == 1)
    play.open_wallets(play.Driver(service.apps[1]), [f"{shard}/bob"])
    rows = service.apps[1].recorder.select_events(wallet_uuid(f"{shard}/bob"))
    service.apps[0].recorder.insert_events(rows)
    service.close()
    assert main(["verify", "--all", "--quiet", "--db", str(two), "--partitions", "2"]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert f"wallet '{shard}/bob' lives in partition 0; its key '{shard}/bob' names partition 1 of 2" in out


def test_a_reader_that_goes_away_is_not_an_unreachable_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found from the outside: `pokdeng replay ... | head -1` now and then said "[Errno 32] Broken pipe" and
    exited 4, the code of an unreachable store. A closed pipe exits as a shell reports SIGPIPE, quietly."""
    import sys

    cli = sys.modules["pokdeng_service.cli.main"]  # (the module: the package's ``main`` is its function)

    def closed(_args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    replay_closed = tuple((n, h, o, closed if n == "replay" else run) for n, h, o, run in cli.COMMANDS)
    monkeypatch.setattr(cli, "COMMANDS", replay_closed)  # (the parser's table of commands and their handlers)
    monkeypatch.setattr(cli.os, "dup2", lambda *_fds: None)  # (standard output stays pytest's)
    assert main(["replay", "t#1"]) == cli.EXIT_SIGPIPE == 141


def test_serve_checks_its_token_file_before_it_makes_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found from the outside: `serve --tokens missing.json` said so clearly, but had made the store (and its
    vault key) first."""
    db = tmp_path / "new.sqlite"
    for tokens in (tmp_path / "missing.json", tmp_path / "broken.json"):
        if tokens.name == "broken.json":
            tokens.write_text("{not json")
            tokens.chmod(0o600)  # (its owner's alone: refused for what it holds, not for its mode)
        assert main(["serve", "--db", str(db), "--port", "0", "--tokens", str(tokens)]) == EXIT_USAGE
        assert "token file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.json"]


def test_read_models_are_checked_against_the_record(
    played: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows of the read models edited in the database (a restored backup, say) leave every event as it was:
    ``verify --all`` compares every row with a fold of the events and names the first difference, and a
    player's list of rounds is decided by the record, never by a view row alone."""
    import sqlite3

    from pokdeng_service.readmodels import ReadModels

    db, rounds = played
    config = StoreConfig.from_args(db=str(db))
    service = PartitionedPokdeng.open(config)
    with ReadModels(config.env(0)) as models:
        models.catch_up(service.apps[0])
        assert [r.round_id for r in models.list_rounds(player="ben")] == rounds[::-1]
    service.close()
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_OK
    assert "FAIL  read models" not in capsys.readouterr().out  # (passed: --quiet prints failures only)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE pokdeng_wallets SET balance = 77777777 WHERE wallet_id = 'ann'")
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert "FAIL  read models" in out and "wallet 'ann': the views say balance 77777777" in out
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM pokdeng_wallets")  # (the balances put right: rebuilt below)
        position = conn.execute("SELECT closed_position FROM pokdeng_round_history").fetchone()[0]
        conn.execute(
            "INSERT INTO pokdeng_round_players (player, closed_position, round_id, table_id) VALUES (?, ?, ?, ?)",
            ("zoe", position, "km#1", "km"),
        )
    assert main(["rebuild-read-models", "--db", str(db)]) == EXIT_OK
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_OK
    with sqlite3.connect(db) as conn:  # a player's row for a round she never played
        conn.execute(
            "INSERT INTO pokdeng_round_players (player, closed_position, round_id, table_id) VALUES (?, ?, ?, ?)",
            ("ann", position + 10_000, rounds[0], "km"),
        )
    capsys.readouterr()
    assert main(["verify", "--all", "--quiet", "--db", str(db)]) == EXIT_FAILED
    assert "players' rounds" in capsys.readouterr().out
