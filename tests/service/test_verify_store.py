"""Whole-store verification (``audit.verify_store``, ``pokdeng verify --all``): every stream, not only rounds.

Tampering is done as an insider would: by editing the stored rows (events and snapshots) directly
in the SQLite file or the PostgreSQL tables, bypassing the application. Each case must fail the
verification of the stream it touched, naming that stream and the first bad position in it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest

from pokdeng_core.errors import InsufficientFunds
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, main
from pokdeng_service.store.aggregates import round_uuid, seed_uuid, table_uuid, wallet_uuid

from . import play
from .rows import StoredRows
from .test_audit import play_rounds

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

# --- direct access to the stored rows --------------------------------------------------------------


def _version_of(rows: StoredRows, uuid: UUID, topic_end: str, data_kind: str | None = None) -> int:
    """The position of the stream's first row of a class (or, in a chained stream, of a kind)."""
    for version, topic, state in rows.read(uuid):
        if topic.endswith(topic_end) and (data_kind is None or state.get("kind") == data_kind):
            return version
    raise AssertionError(f"no {topic_end} {data_kind or ''} row in stream {uuid}")


# --- the record every case starts from ----------------------------------------------------------------


@dataclass
class Played:
    app: PokdengApp
    driver: play.Driver
    rounds: list[str]


def _play(app: PokdengApp, long_wallet: bool = False) -> Played:
    """Three closed classic rounds on table ``t`` (ann, ben and cat seated), a withdrawal; with
    ``long_wallet``, ben's wallet has more than 100 events (so a snapshot of it is stored)."""
    d = play.Driver(app, chooser=play.Chooser(random.Random(4)))
    play.open_wallets(d, ["ann", "ben", "cat"])
    play.open_table(d, "t", "classic", [(1, "ann"), (2, "ben"), (3, "cat")])
    rounds = []
    for n in range(3):
        round_id = play.start_round(d, "t", f"client-{n}")
        play.seat_bets(d, round_id, 200)
        play.drive_round(d, round_id)
        rounds.append(round_id)
    d.call("withdraw", "ann", 1_000)
    if long_wallet:
        for _ in range(100):
            d.call("deposit", "ben", 1)
    return Played(app, d, rounds)


def _verified(app: PokdengApp) -> dict[str, audit.Verdict]:
    verdicts = audit.verify_store(app)
    subjects = [v.subject for v in verdicts]
    assert len(subjects) == len(set(subjects)), subjects
    return {v.subject: v for v in verdicts}


def _assert_clean(app: PokdengApp) -> None:
    failed = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not failed, "\n".join(failed)


def _assert_fails_at(verdicts: dict[str, audit.Verdict], subject: str, check: str, position: int) -> None:
    """The stream's verdict fails, and its first failing check is ``check``, naming ``position``."""
    verdict = verdicts[subject]
    assert not verdict.ok, verdict.render()
    first = next(c for c in verdict.checks if not c.ok)
    assert first.name == check, verdict.render()
    assert first.detail.startswith((f"position {position}:", f"position {position} (")), verdict.render()
    assert verdict.first_difference == f"{check}: {first.detail}"


# --- the eight cases ------------------------------------------------------------------------------------


def _raise_deposit(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(a) A wallet's Deposited amount raised by 5,000,000."""
    uuid = wallet_uuid("ann")
    version = _version_of(rows, uuid, "Wallet.Deposited")
    state = next(s for v, _t, s in rows.read(uuid) if v == version)
    state["amount"] += 5_000_000
    rows.write(uuid, version, state)
    return "wallet ann", "chain", version


def _drop_reservation(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(b) A wallet's FundsReserved deleted and the stream renumbered (no gap left)."""
    uuid = wallet_uuid("ann")
    version = _version_of(rows, uuid, "Wallet.FundsReserved")
    last = rows.read(uuid)[-1][0]
    rows.delete(uuid, version)
    for later in range(version + 1, last + 1):
        rows.renumber(uuid, later, later - 1)
    assert [v for v, _t, _s in rows.read(uuid)] == list(range(1, last))
    return "wallet ann", "chain", version


def _raise_snapshot_balance(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(c) Only a wallet snapshot's balance raised."""
    uuid = wallet_uuid("ben")
    snapshots = rows.read(uuid, snapshots=True)
    assert snapshots, "ben's wallet has no snapshot"
    version, _topic, state = snapshots[-1]
    state["state"]["balance"] += 5_000_000
    rows.write(uuid, version, state, snapshots=True)
    return "wallet ben", "snapshots", version


def _change_house_net(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(d) A table's round_finished house_net changed."""
    uuid = table_uuid("t")
    version = _version_of(rows, uuid, "TableRecord.RoundFinished", "round_finished")
    state = next(s for v, _t, s in rows.read(uuid) if v == version)
    state["data"]["house_net"] += 100
    rows.write(uuid, version, state)
    return "table t", "chain", version


def _reseat(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(e) A table's player_seated changed to another player."""
    uuid = table_uuid("t")
    version = _version_of(rows, uuid, "TableRecord.PlayerSeated", "player_seated")
    state = next(s for v, _t, s in rows.read(uuid) if v == version)
    assert state["data"]["player"] == "ann"
    state["data"]["player"] = "cat"
    rows.write(uuid, version, state)
    return "table t", "chain", version


def _drop_round_tail(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(f) A round's last two events (seed_revealed, round_closed) deleted."""
    round_id = played.rounds[1]
    uuid = round_uuid(round_id)
    stored = rows.read(uuid)
    assert [s["kind"] for _v, _t, s in stored[-2:]] == ["seed_revealed", "round_closed"]
    for version, _topic, _state in stored[-2:]:
        rows.delete(uuid, version)
    return f"round {round_id}", "complete", stored[-2][0]


def _drop_round(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(g) A whole round stream deleted."""
    round_id = played.rounds[1]
    rows.delete(round_uuid(round_id))
    return f"round {round_id}", "stream", 1


def _append_creation_copy(rows: StoredRows, played: Played) -> tuple[str, str, int]:
    """(h) A copy of a round's creation row appended to its stream."""
    round_id = played.rounds[1]
    uuid = round_uuid(round_id)
    last = rows.read(uuid)[-1][0]
    rows.insert_copy(uuid, 1, last + 1)
    return f"round {round_id}", "stream", last + 1


CASES: dict[str, Callable[[StoredRows, Played], tuple[str, str, int]]] = {
    "a_deposit_raised": _raise_deposit,
    "b_reservation_deleted_renumbered": _drop_reservation,
    "c_snapshot_balance_raised": _raise_snapshot_balance,
    "d_round_finished_house_net": _change_house_net,
    "e_player_seated_changed": _reseat,
    "f_round_tail_deleted": _drop_round_tail,
    "g_round_stream_deleted": _drop_round,
    "h_creation_row_appended": _append_creation_copy,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tampering_fails_the_stream_at_its_first_bad_position(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], case: str
) -> None:
    played = _play(make_app(), long_wallet=case.startswith("c_"))
    _assert_clean(played.app)
    subject, check, position = CASES[case](StoredRows(app_env), played)
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="")
    verdicts = _verified(fresh)
    _assert_fails_at(verdicts, subject, check, position)
    if case.startswith(("f_", "g_")):  # the table's record of the round fails too
        assert not verdicts["table t"].ok, verdicts["table t"].render()


def test_the_server_refuses_a_wallet_snapshot_that_disagrees_with_its_events(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """(c) as the server sees it: the raised balance is neither reported nor paid out; the wallet is
    folded from its events instead, with an alert naming the snapshot."""
    played = _play(make_app(), long_wallet=True)
    true = played.app.get_wallet("ben")
    _raise_snapshot_balance(StoredRows(app_env), played)
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="")
    with caplog.at_level(logging.CRITICAL, logger="pokdeng.integrity"):
        assert fresh.get_wallet("ben") == true
        with pytest.raises(InsufficientFunds):
            fresh.withdraw("w-raised", "ben", true.available + 1)
        assert fresh.wallet_statement("ben", after=true.version - 1, limit=1)[0].balance_after == true.balance
    refused = [r for r in caplog.records if "SNAPSHOT REFUSED" in r.getMessage()]
    assert refused and str(wallet_uuid("ben")) in refused[0].getMessage()
    fresh.withdraw("w-true", "ben", true.available)  # what it does hold, it may take
    assert fresh.get_wallet("ben").balance == true.balance - true.available


def test_the_server_refuses_a_table_snapshot_that_disagrees_with_its_events(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A table snapshot's house_net and seats edited: the table is folded from its events instead."""
    played = _play(make_app())
    d = played.driver
    players = [f"dan{n}" for n in range(16)]  # (a player takes 4 seats at most between two rounds)
    play.open_wallets(d, players)
    seatings = iter([p for p in players for _ in range(4)])
    while played.app.get_table("t").version < 105:
        player = next(seatings)
        d.call("take_seat", "t", player, 4)
        d.call("leave_seat", "t", player, 4)
    true = played.app.get_table("t")
    rows = StoredRows(app_env)
    uuid = table_uuid("t")
    version, _topic, state = rows.read(uuid, snapshots=True)[-1]
    table_state = state["state"]["state"]["_data_"]
    table_state["house_net"] += 1_000
    table_state["seats"] = [[1, "dan0"], *table_state["seats"][1:]]
    rows.write(uuid, version, state, snapshots=True)
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="")
    with caplog.at_level(logging.CRITICAL, logger="pokdeng.integrity"):
        assert fresh.get_table("t") == true
    assert any("SNAPSHOT REFUSED" in r.getMessage() for r in caplog.records)
    _assert_fails_at(_verified(fresh), "table t", "snapshots", version)


def test_wallets_stored_before_the_chain_are_reported_unchained_not_a_crash(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str]
) -> None:
    """A store written before wallets were chained: its wallet rows have no digest. They still load,
    verification reports them as unchained, and the events written since are chained from the
    wallet's genesis."""
    played = _play(make_app())
    true = played.app.get_wallet("ann")
    rows = StoredRows(app_env)
    uuid = wallet_uuid("ann")
    stored = rows.read(uuid)
    for version, _topic, state in stored[1:]:
        del state["digest"]
        rows.write(uuid, version, state)
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="")
    assert fresh.get_wallet("ann") == true
    last = stored[-1][0]
    _assert_fails_at(_verified(fresh), "wallet ann", "chain", 2)
    assert "unchained: positions 2 to" in _verified(fresh)["wallet ann"].first_difference
    fresh.deposit("after-legacy", "ann", 5)
    verdict = _verified(make_app(AGGREGATE_CACHE_MAXSIZE=""))["wallet ann"]
    assert [c.name for c in verdict.checks if not c.ok] == ["chain"], verdict.render()
    assert f"positions 2 to {last} ({last - 1} events)" in verdict.first_difference
    store = _verified(fresh)["store"]
    assert not store.ok and "wallet ann position 2: no digest" in store.first_difference


def test_a_sealed_seed_is_one_creation_row_and_an_open_rounds_seed_opens_to_its_commitment(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str]
) -> None:
    """Settlement depends on the sealed seed of a round still open (its cards to come): its stream is
    exactly its creation row, and (with the vault key here) it opens to the round's commitment."""
    played = _play(make_app())
    still_open = play.start_round(played.driver, "t", "open")
    play.seat_bets(played.driver, still_open, 100)
    _assert_clean(played.app)
    rows = StoredRows(app_env)
    rows.insert_copy(seed_uuid(played.rounds[0]), 1, 2)
    seeds = _verified(make_app(AGGREGATE_CACHE_MAXSIZE=""))["sealed seeds"]
    assert not seeds.ok
    assert seeds.first_difference.startswith(f"streams: seed of round {played.rounds[0]} position 2 (Sealed):")
    rows.delete(seed_uuid(played.rounds[0]), 2)
    _assert_clean(make_app(AGGREGATE_CACHE_MAXSIZE=""))
    # Another round's seal put in the open round's seed stream: it names the open round, but its
    # seal is bound to the other round's stream.
    (_v, _t, other), (_w, _u, mine) = rows.read(seed_uuid(played.rounds[0]))[0], rows.read(seed_uuid(still_open))[0]
    rows.write(seed_uuid(still_open), 1, {**mine, "nonce": other["nonce"], "sealed": other["sealed"]})
    verdicts = _verified(make_app(AGGREGATE_CACHE_MAXSIZE=""))
    assert verdicts["sealed seeds"].first_difference.startswith(
        f"open rounds: seed of round {still_open} position 1: it does not open"
    ), verdicts["sealed seeds"].render()
    assert not verdicts[f"round {still_open} (open)"].ok


def test_an_untampered_store_passes(make_app: Callable[..., PokdengApp]) -> None:
    played = _play(make_app(), long_wallet=True)
    verdicts = _verified(make_app(AGGREGATE_CACHE_MAXSIZE=""))
    assert all(v.ok for v in verdicts.values()), "\n".join(v.render() for v in verdicts.values() if not v.ok)
    assert {f"round {r}" for r in played.rounds} <= verdicts.keys()
    assert {"table t", "wallet ann", "wallet ben", "wallet cat", "sealed seeds", "command records", "store"} <= (
        verdicts.keys()
    )


def test_verify_all_passes_an_untampered_store_of_every_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pokdeng verify --all`` after rounds of all four profiles, deposits, withdrawals, voids, an open
    round and a wallet of more than 100 events (snapshotted)."""
    db = tmp_path / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    app = service.apps[0]
    d = play.Driver(app, chooser=play.Chooser(random.Random(9)))
    closed = []
    for profile in play.PROFILES:
        closed += play_rounds(d, profile, 3)
    d.call("deposit", "classic-t-p1", 5_000)
    d.call("withdraw", "classic-t-p1", 2_500)
    for n in range(105):
        d.call("deposit" if n % 3 else "withdraw", "classic-t-p2", 7)
    voided = play.start_round(d, "classic-t", "to-void")
    play.seat_bets(d, voided, 300)
    d.call("void_round", voided, "dealer error")
    closed.append(voided)
    still_open = play.start_round(d, "kingmaker-t", "left-open")
    play.seat_bets(d, still_open, 100)
    assert app.snapshots is not None
    assert len(app.snapshots.recorder.select_events(wallet_uuid("classic-t-p2"))) >= 1
    service.close()
    assert main(["verify", "--all", "--verbose", "--db", str(db)]) == EXIT_OK  # (every verdict, passes too)
    out = capsys.readouterr().out
    assert f"{len(closed)} passed, 0 failed" in out
    assert f"PASS  round {still_open} (open)" in out and "PASS  wallet classic-t-p2" in out
    store_line = next(line for line in out.splitlines() if line.startswith("store: "))
    assert " 0 failed (" in store_line, store_line
    assert "FAIL" not in out
