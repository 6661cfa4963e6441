"""Streams are who they say they are (docs/audit.md): a forged stream is refused, never acted on.

The forger here has write access to the database and no vault key. Rows are written straight
into the store through the application's recorder (``recorder.insert_events``), or edited in
place as tests/service/test_audit.py does, with hash chains computed exactly as the server
computes them: only the checks of who a stream is stop them.

The attack (issue 12): a new round stream whose ``Started`` row names an open round's id (the
victim), the victim's public ``shuffle_committed`` copied, and a ``cards_dealt`` with every
player on taem 0 and the banker on 3, recorded long ago. Before streams were checked, the
server's own turn clock timed the forged round out, drew the victim's next cards into it,
closed it and wrote the victim's ``seed_revealed`` there.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from eventsourcing.persistence import StoredEvent
from google.rpc import code_pb2, error_details_pb2  # type: ignore[import-untyped]

from pokdeng_core.round_state import Phase
from pokdeng_service import audit
from pokdeng_service.api.errors import status_for
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import NotFound, StreamForged
from pokdeng_service.application.principal import SYSTEM
from pokdeng_service.application.queries import round_view
from pokdeng_service.application.turn_clock import TurnClock
from pokdeng_service.store.aggregates import command_uuid, round_uuid, seed_uuid, table_uuid, wallet_uuid
from pokdeng_service.store.codec import chain_digest, genesis_digest
from pokdeng_service.store.vault import AAD_ROUND_ID, AAD_ROUND_STREAM, SeedVault, VaultError

from . import play
from .test_audit import Rows

pytestmark = pytest.mark.each_store  # (the store is the subject: PostgreSQL too)

LONG_AGO = "2020-01-01T00:00:00+00:00"
# Every player on taem 0 (10 + K), the banker on 3 (10 + 3): each draws at its timeout.
DEAL = [[1, "10H"], [2, "10D"], [0, "10S"], [1, "KH"], [2, "KD"], [0, "3C"]]
INTEGRITY = "pokdeng.integrity"


# --- the forger ------------------------------------------------------------------------------------


def _state(row: Any) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(bytes(row.state))
    return state


def _all_rows(app: PokdengApp) -> list[Any]:
    return list(app.recorder.select_notifications(start=1, limit=1_000_000))


def forge_round(
    app: PokdengApp,
    victim_id: str,
    stream_id: str,
    claims: str,
    deal: list[list[Any]] = DEAL,
    break_chain: bool = False,
) -> UUID:
    """Insert a round stream at ``round_uuid(stream_id)``: a ``Started`` row naming round ``claims``,
    the victim's public opening copied (``round_opened``, naming ``claims``, its ``shuffle_committed``
    and whatever else it recorded before its deal, bets left out), and a ``cards_dealt`` recorded long
    ago. Its facts carry ``stream_id`` (so that the log names the forged stream) and a hash chain from
    the genesis of ``claims``, as the server would have computed it."""
    uuid = round_uuid(stream_id)
    victim_rows = app.recorder.select_events(round_uuid(victim_id))
    started_row, opened_row = victim_rows[0], victim_rows[1]
    started = {**_state(started_row), "round_id": claims}
    facts: list[tuple[str, dict[str, Any]]] = []
    for row in victim_rows[1:]:
        state = _state(row)
        if state["kind"] == "cards_dealt":
            break
        if state["kind"] != "bet_placed":
            facts.append((row.topic, state))
    opened = facts[0][1]
    assert opened["kind"] == "round_opened" and any(f["kind"] == "shuffle_committed" for _t, f in facts)
    opened["data"] = {**opened["data"], "round_id": claims, "round_no": int(claims.rsplit("#", 1)[1])}
    dealt = {**opened, "kind": "cards_dealt", "data": {"cards": deal, "banker_up_card": None}}
    dealt["timestamp"] = {"_type_": "datetime_iso", "_data_": LONG_AGO}
    facts.append((opened_row.topic.replace("RoundOpened", "CardsDealt"), dealt))
    rows = [StoredEvent(uuid, 1, started_row.topic, json.dumps(started).encode())]
    previous = genesis_digest(claims)
    for version, (topic, fact) in enumerate(facts, start=2):
        fact = {**fact, "stream_id": stream_id, "command_id": "forged"}
        stamp = fact["timestamp"]["_data_"]
        fact["digest"] = chain_digest(previous, fact["kind"], fact["data"], version, "forged", stamp)
        if break_chain and version == len(facts) + 1:
            fact["digest"] = "0" * 64
        previous = fact["digest"]
        rows.append(StoredEvent(uuid, version, topic, json.dumps(fact).encode()))
    app.recorder.insert_events(rows)
    return uuid


def copy_stream(
    app: PokdengApp, source: UUID, target: UUID, edit: Callable[[dict[str, Any]], None] | None = None
) -> None:
    """Insert a copy of stream ``source``'s rows as stream ``target`` (the first row edited by ``edit``)."""
    rows = []
    for row in app.recorder.select_events(source):
        state = _state(row)
        if edit is not None and row.originator_version == 1:
            edit(state)
        rows.append(StoredEvent(target, row.originator_version, row.topic, json.dumps(state).encode()))
    app.recorder.insert_events(rows)


# --- the scene ---------------------------------------------------------------------------------------


def _victim(driver: play.Driver, table_id: str = "t") -> str:
    """An open classic round, dealt, waiting on a player: its draws are still to come. (It moved
    just now: the clocks here run an hour after the forged deal, years before the victim's.)"""
    app = driver.app
    names = [f"{table_id}-a", f"{table_id}-b"]
    play.open_wallets(driver, names)
    play.open_table(driver, table_id, "classic", [(1, names[0]), (2, names[1])])
    for _ in range(30):  # the cards are random: a banker's pok ends a round at the deal
        victim = play.start_round(driver, table_id, "client")
        play.seat_bets(driver, victim, 200)
        driver.call("deal", victim)
        if app.round_state(victim).phase is Phase.PLAYER_TURNS:
            return victim
        play.drive_round(driver, victim)
    raise AssertionError("no round of 30 waited on a player")


def _later() -> datetime:
    return datetime.fromisoformat(LONG_AGO) + timedelta(hours=1)


def _alerts(caplog: pytest.LogCaptureFixture, uuid: UUID) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == INTEGRITY and r.levelno >= logging.ERROR and str(uuid) in r.getMessage()
    ]


def _assert_seed_nowhere(app: PokdengApp, seed_hex: str, caplog: pytest.LogCaptureFixture) -> None:
    for row in _all_rows(app):
        assert seed_hex.encode() not in bytes(row.state), (row.originator_id, row.topic)
    assert seed_hex not in caplog.text


# --- the attack ----------------------------------------------------------------------------------------


def test_the_forged_round_attack_learns_nothing(
    make_app: Callable[..., PokdengApp], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(12)))
    victim = _victim(driver)
    forged = forge_round(app, victim, "t#evil", claims=victim)
    written = app.recorder.max_notification_id()
    victim_rows = [bytes(r.state) for r in app.recorder.select_events(round_uuid(victim))]
    forged_rows = [bytes(r.state) for r in app.recorder.select_events(forged)]

    # The server's own turn clock, an hour on, in this process (the victim's shoe in memory) and in a fresh one.
    clocks = [TurnClock(app, now=_later), TurnClock(make_app(), now=_later)]
    for clock in clocks:
        for _ in range(3):
            assert clock.tick() == []
        assert "t#evil" in clock.refused and "t#evil" not in clock.open_rounds

    assert app.recorder.max_notification_id() == written  # nothing was written anywhere
    assert [bytes(r.state) for r in app.recorder.select_events(forged)] == forged_rows
    assert [bytes(r.state) for r in app.recorder.select_events(round_uuid(victim))] == victim_rows
    assert _alerts(caplog, forged), "no integrity alert names the forged stream"
    seed_hex = app.server_seed(victim).hex()
    _assert_seed_nowhere(app, seed_hex, caplog)

    # The victim still plays, from its own shoe, and verifies.
    view = play.drive_round(driver, victim)
    play.assert_cards_from_shoe(view)
    assert view.server_seed == seed_hex
    verdict = audit.verify_round(app, victim, check_wallets=True)
    assert verdict.ok, verdict.render()


def test_the_turn_clock_skips_and_logs_a_round_its_table_never_opened(
    make_app: Callable[..., PokdengApp], caplog: pytest.LogCaptureFixture
) -> None:
    """A forger who keeps the uuid true to the id (``t#99`` at ``round_uuid("t#99")``, its chain
    right) and copies the victim's seal beside it, downgraded to the old associated data: the table
    never opened round 99, so no command (the clock's timeout included) touches it or its seal."""
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(13)))
    victim = _victim(driver)
    forged = forge_round(app, victim, "t#99", claims="t#99")

    def as_round_99(state: dict[str, Any]) -> None:
        state["round_id"] = "t#99"
        state["aad_version"] = AAD_ROUND_ID

    copy_stream(app, seed_uuid(victim), seed_uuid("t#99"), as_round_99)
    written = app.recorder.max_notification_id()
    fresh = make_app()
    assert fresh.get_round("t#99").phase == Phase.PLAYER_TURNS.value  # it reads as a round, waiting
    with pytest.raises(StreamForged, match="never opened"):
        fresh.time_out_turn("timeout-9", "t#99")
    clock = TurnClock(fresh, now=_later)
    assert clock.tick() == []
    assert clock.refused == {"t#99"}
    alerts = len(_alerts(caplog, forged))
    assert alerts >= 2  # the direct command's and the clock's
    assert any(r.name.endswith("turn_clock") and r.levelno == logging.ERROR for r in caplog.records)
    assert clock.tick() == [] and len(_alerts(caplog, forged)) == alerts  # skipped from now on, not read again
    assert app.recorder.max_notification_id() == written
    _assert_seed_nowhere(app, app.server_seed(victim).hex(), caplog)
    play.drive_round(driver, victim)
    assert audit.verify_round(app, victim, check_wallets=True).ok


# --- refused on load -----------------------------------------------------------------------------------


def _forged_error(call: Callable[[], object]) -> StreamForged:
    with pytest.raises(StreamForged) as caught:
        call()
    return caught.value


def test_a_round_whose_uuid_is_not_its_ids_is_refused_on_load(
    make_app: Callable[..., PokdengApp], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(14)))
    victim = _victim(driver)
    forged = forge_round(app, victim, "t#evil", claims=victim)
    for reader in (app, make_app()):  # a running server and a fresh one
        error = _forged_error(partial(reader.get_round, "t#evil"))
        assert error.details["uuid"] == str(forged) and error.details["stream"] == "round"
        assert "t#evil" in error.message and victim in error.message
        for call in (
            partial(reader.round_state, "t#evil"),
            partial(reader.server_seed, "t#evil"),
            partial(reader.legal_commands, "t#evil"),
            partial(reader.round_events, "t#evil"),
            partial(audit.export_bundle, reader, "t#evil"),
            partial(reader.time_out_turn, "t-out", "t#evil"),
            partial(reader.void_round, "t-void", "t#evil", "forged"),
        ):
            _forged_error(call)
        verdict = audit.verify_round(reader, "t#evil", check_wallets=True)
        assert not verdict.ok and [c.name for c in verdict.checks if not c.ok] == ["stream"], verdict.render()
    assert _alerts(caplog, forged)
    # The API's status: DATA_LOSS, reason STREAM_FORGED, naming the stream.
    status = status_for(error)
    assert status.code == code_pb2.DATA_LOSS
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.reason == "STREAM_FORGED" and info.metadata["uuid"] == str(forged)
    assert app.get_round(victim).phase == Phase.PLAYER_TURNS.value  # the victim itself reads as before


def test_rounds_loaded_together_are_checked_as_each_alone(
    make_app: Callable[..., PokdengApp], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of rounds loaded together (``read_rounds``, ``get_rounds``: ListRounds' cold path, each stream read
    once) is checked as a round loaded alone: the forged streams among them (another round's id, a broken chain, a
    row that cannot be folded) are left to ``get_round``, which refuses them with their alert; the others are what
    a fresh process's ``get_round`` gives, and are cached as it would cache them."""
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(17)))
    play.open_wallets(driver, ["u-a", "u-b"])
    play.open_table(driver, "u", "classic", [(1, "u-a"), (2, "u-b")])
    for _ in range(3):
        round_id = play.start_round(driver, "u", "client")
        play.seat_bets(driver, round_id, 100)
        play.drive_round(driver, round_id)
    victim = _victim(driver)
    rounds = [f"u#{n}" for n in (1, 2, 3)] + [f"t#{n}" for n in range(1, int(victim.rsplit("#", 1)[1]) + 1)]
    evil = forge_round(app, victim, "t#evil", claims=victim)
    broken = forge_round(app, victim, "t#99", claims="t#99", break_chain=True)
    unfoldable = round_uuid("u#3")  # (a copy of its creation row appended: refused, "cannot be folded")
    rows = app.recorder.select_events(unfoldable)
    app.recorder.insert_events([StoredEvent(unfoldable, len(rows) + 1, rows[0].topic, rows[0].state)])
    good = [r for r in rounds if r != "u#3"]
    alone = make_app()
    fresh = make_app()
    asked = [*good, "t#evil", "t#99", "u#3", "t#404", "not an id!"]
    read = fresh.read_rounds(asked)
    assert sorted(read) == sorted(good)  # the forged, the missing and the malformed left out
    for round_id in good:
        record, events = read[round_id]
        assert round_view(record, events) == alone.get_round(round_id)
        assert fresh.repository.cache is not None
        assert fresh.repository.cache.get(round_uuid(round_id)).version == record.version  # cached, as loaded
    assert not _alerts(caplog, evil) and not _alerts(caplog, broken)  # (left to get_round, which alerts)
    assert fresh.read_rounds(good) == {}  # all cached now: nothing read again
    with monkeypatch.context() as patched:  # the views' events are cached too: none read again
        patched.setattr(fresh, "stream_events", None)
        assert fresh.get_rounds(good) == [alone.get_round(r) for r in good]
    cold = make_app()
    assert cold.get_rounds(good) == [alone.get_round(r) for r in good]
    for forged, uuid, problem in (("t#evil", evil, victim), ("t#99", broken, "hash chain"), ("u#3", unfoldable, "")):
        error = _forged_error(partial(make_app().get_rounds, [*good, forged]))
        assert error.details["uuid"] == str(uuid) and problem in error.message
        assert _alerts(caplog, uuid)
    with pytest.raises(NotFound):
        make_app().get_rounds([*good, "t#404"])


def test_tables_wallets_and_request_records_are_checked_against_their_ids(
    make_app: Callable[..., PokdengApp], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(15)))
    _victim(driver)
    balance = app.get_wallet("t-a").balance  # (whatever the victim's rounds left it)
    copy_stream(app, table_uuid("t"), table_uuid("t-copy"))  # claims to be table "t"
    copy_stream(app, wallet_uuid("t-a"), wallet_uuid("mallory"))  # claims to be wallet "t-a"
    internal = SYSTEM.scope  # the scope of the requests the driver sends (as the service itself)
    copy_stream(app, command_uuid(driver.log[0].request_id, internal), command_uuid("forged-request", internal))
    for reader in (app, make_app()):
        _forged_error(partial(reader.get_table, "t-copy"))
        _forged_error(partial(reader.start_round, "start-copy", "t-copy"))
        _forged_error(partial(reader.get_wallet, "mallory"))
        _forged_error(partial(reader.deposit, "dep-mallory", "mallory", 5))
        _forged_error(partial(reader.command_record, command_uuid("forged-request", internal)))
        # A request whose id the forger took: its save meets the forged record, which is refused.
        _forged_error(partial(reader.deposit, "forged-request", "t-a", 5))
    for uuid in (table_uuid("t-copy"), wallet_uuid("mallory"), command_uuid("forged-request", internal)):
        assert _alerts(caplog, uuid), uuid
    assert app.get_wallet("t-a").balance == balance  # no forged deposit landed


def test_a_round_whose_chain_does_not_recompute_is_refused_on_first_load(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(16)))
    victim = _victim(driver)
    forged = forge_round(app, victim, "t#99", claims="t#99", break_chain=True)
    error = _forged_error(lambda: make_app().get_round("t#99"))
    assert "hash chain" in error.message and _alerts(caplog, forged)
    # An edit of the victim's own stream (a stake) is refused by a process that loads it first.
    rows = Rows(app_env, victim)
    version = next(v for v, topic, _s in rows.read() if topic.endswith("BetPlaced"))
    state = next(s for v, _t, s in rows.read() if v == version)
    state["data"]["stake"] += 1
    rows.write(version, state)
    error = _forged_error(lambda: make_app().get_round(victim))
    assert f"event {version}" in error.message


def test_a_wallet_whose_chain_does_not_recompute_is_refused_on_first_load(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Found from the outside: a deposit's amount edited in place (its digest left as it was) was served and
    paid out by a restarted server; only `verify --all` said so. A wallet's movements folded from the store
    now recompute its chain (docs/audit.md, "The wallet chain"), as a round's and a table's do: a process
    that loads it first refuses it. A movement without a digest after chained ones is refused too."""
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app)
    play.open_wallets(driver, ["zed", "amy"], amount=1000)
    driver.call("deposit", "zed", 500)
    driver.call("deposit", "amy", 1)
    rows = Rows(app_env, "zed")
    rows.id = wallet_uuid("zed")
    deposit = next(v for v, topic, _s in rows.read() if topic.endswith("Deposited"))
    state = next(s for v, _t, s in rows.read() if v == deposit)
    state["amount"] = 5_000_000
    rows.write(deposit, state)
    error = _forged_error(lambda: make_app().get_wallet("zed"))
    assert f"event {deposit}" in error.message and "hash chain" in error.message
    assert make_app().get_wallet("amy").balance == 1001  # (another wallet loads as before)
    rows.id = wallet_uuid("amy")
    last = max(v for v, _t, _s in rows.read())
    state = next(s for v, _t, s in rows.read() if v == last)
    state["digest"] = ""
    rows.write(last, state)  # a chained wallet's movement stripped of its digest
    error = _forged_error(lambda: make_app().get_wallet("amy"))
    assert "carries no digest" in error.message


# --- seals ---------------------------------------------------------------------------------------------


def test_a_seal_from_one_round_cannot_be_opened_for_another() -> None:
    vault = play.vault()
    seed = bytes(range(32))
    nonce, sealed = vault.seal(seed, "t#1", round_uuid("t#1"))
    assert vault.open(nonce, sealed, "t#1", round_uuid("t#1"), AAD_ROUND_STREAM) == seed
    for round_id, stream, version in (
        ("t#2", round_uuid("t#2"), AAD_ROUND_STREAM),  # another round
        ("t#1", round_uuid("t#evil"), AAD_ROUND_STREAM),  # the same id on another stream
        ("t#1", round_uuid("t#1"), AAD_ROUND_ID),  # downgraded to the old associated data
    ):
        with pytest.raises(VaultError):
            vault.open(nonce, sealed, round_id, stream, version)
    with pytest.raises(VaultError):
        SeedVault.ephemeral().open(nonce, sealed, "t#1", round_uuid("t#1"), AAD_ROUND_STREAM)
    # A seal of before the binding (the round id alone) still opens, as version 1.
    old_nonce = bytes(12)
    old = AESGCM(bytes.fromhex(play.VAULT_KEY)).encrypt(old_nonce, seed, b"t#1").hex()
    assert vault.open(old_nonce.hex(), old, "t#1", round_uuid("t#1"), AAD_ROUND_ID) == seed


def test_a_seal_moved_to_another_rounds_stream_does_not_open(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str]
) -> None:
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(17)))
    first, second = _victim(driver, "t"), _victim(driver, "u")
    seal = next(s for _v, _t, s in _seed_rows(app_env, first).read())
    rows = _seed_rows(app_env, second)
    for version in (AAD_ROUND_STREAM, AAD_ROUND_ID):
        rows.write(1, {**seal, "round_id": second, "aad_version": version})
        with pytest.raises(VaultError):
            make_app().server_seed(second)
    rows.write(1, seal)  # as it was: it claims round t#1 on round u#1's seed stream
    _forged_error(lambda: make_app().server_seed(second))


def test_rounds_sealed_before_the_binding_still_resume(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str]
) -> None:
    """A round whose seal was stored before the stream binding (associated data: the round id;
    no ``aad_version`` in the row) opens, plays to its close and verifies."""
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(18)))
    victim = _victim(driver)
    seed = app.server_seed(victim)
    rows = _seed_rows(app_env, victim)
    state = next(s for _v, _t, s in rows.read())
    assert state["aad_version"] == AAD_ROUND_STREAM
    del state["aad_version"]
    nonce = bytes.fromhex(state["nonce"])
    state["sealed"] = AESGCM(bytes.fromhex(play.VAULT_KEY)).encrypt(nonce, seed, victim.encode()).hex()
    rows.write(1, state)
    later = make_app()
    assert later.server_seed(victim) == seed
    view = play.drive_round(play.Driver(later, prefix="later", chooser=play.Chooser(random.Random(1))), victim)
    assert view.server_seed == seed.hex()
    assert audit.verify_round(later, victim, check_wallets=True).ok


def _seed_rows(app_env: dict[str, str], round_id: str) -> Rows:
    rows = Rows(app_env, round_id)
    rows.id = seed_uuid(round_id)
    return rows


def test_a_stream_that_cannot_be_folded_is_refused_as_forged_naming_it(
    make_app: Callable[..., PokdengApp], caplog: pytest.LogCaptureFixture
) -> None:
    """A copy of a stream's creation row appended to it (or any row its class cannot fold) is refused as
    StreamForged (DATA_LOSS, the stream named), for a round, a table and a wallet, never an INTERNAL error."""
    caplog.set_level(logging.DEBUG)
    app = make_app()
    driver = play.Driver(app, chooser=play.Chooser(random.Random(3)))
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "t", "classic", [(1, "a"), (2, "b")])
    round_id = play.start_round(driver, "t", "client")
    for uuid in (round_uuid(round_id), table_uuid("t"), wallet_uuid("a")):
        rows = app.recorder.select_events(uuid)
        app.recorder.insert_events([StoredEvent(uuid, len(rows) + 1, rows[0].topic, rows[0].state)])
    fresh = make_app()
    for kind, ident, load in (
        ("round", round_id, fresh.get_round),
        ("table", "t", fresh.get_table),
        ("wallet", "a", fresh.get_wallet),
    ):
        error = _forged_error(partial(load, ident))
        assert error.details["stream"] == kind and ident in error.message
        assert "cannot be folded" in error.message
        assert status_for(error).code == code_pb2.DATA_LOSS
