"""Fairness audits (docs/audit.md): bit-exact replay, tamper evidence, secret seeds, offline bundles.

Tampering is done the way an insider would: by editing the event rows directly in
the SQLite file or the PostgreSQL table, bypassing the application.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any, cast

import pytest

from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.store.aggregates import round_uuid
from pokdeng_service.store.facts import RecordedEvent

from . import play
from .rows import StoredRows


def play_rounds(d: play.Driver, profile: str, rounds: int, table: str | None = None) -> list[str]:
    table_id = table or f"{profile}-t"
    names = [f"{table_id}-p{i}" for i in range(1, 4)]
    play.open_wallets(d, names)
    if profile == "ante":
        play.open_table(d, table_id, profile, min_stake=100, max_stake=1000)
    elif profile == "room":
        banker = f"{table_id}-banker"
        play.open_wallets(d, [banker], 10_000_000)
        play.open_table(d, table_id, profile, [(1, names[0]), (2, names[1]), (3, banker)])
        play.hold_banker_bid(d, table_id, [(banker, 10), (names[0], 0), (names[1], 0)])
    else:
        play.open_table(d, table_id, profile, [(i + 1, n) for i, n in enumerate(names)])
    ids: list[str] = []
    for _ in range(rounds):
        if profile == "room" and d.app.get_table(table_id).banker is None:  # the tenure was served
            d.call("take_seat", table_id, f"{table_id}-banker", 3)
            play.hold_banker_bid(d, table_id, [(f"{table_id}-banker", 10)])
        round_id = play.start_round(d, table_id, f"client-{len(ids)}")
        if profile == "ante":
            play.place_bets(d, round_id, [(1, names[0], 200), (3, names[1], 400), (3, names[2], 100 * 2)])
        else:
            play.seat_bets(d, round_id, 200)
        play.drive_round(d, round_id)
        ids.append(round_id)
    return ids


@pytest.mark.parametrize("profile", ["classic", "ante", "room", "kingmaker"])
def test_every_closed_round_replays_bit_exact(app: PokdengApp, driver: play.Driver, profile: str) -> None:
    for round_id in play_rounds(driver, profile, 6):
        verdict = audit.verify_round(app, round_id, check_wallets=True)
        assert verdict.ok, verdict.render()
        replay_verdict, replayed = audit.replay_round(app, round_id)
        assert replay_verdict.ok
        stored = [e for e in app.round_events(round_id) if e.digest]
        assert [e.kind for e in stored] == [e.kind for e in replayed]


def test_many_generated_rounds_replay_in_memory() -> None:
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = play.Driver(app, chooser=play.Chooser(random.Random(11)))
    count = 0
    for profile in ("classic", "ante", "room", "kingmaker"):
        for round_id in play_rounds(d, profile, 60):
            verdict = audit.verify_round(app, round_id, check_wallets=False)
            assert verdict.ok, verdict.render()
            count += 1
    assert count == 240


def test_seed_is_secret_until_the_round_closes(app: PokdengApp, driver: play.Driver) -> None:
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "k", "classic", [(1, "a"), (2, "b")])
    round_id = play.start_round(driver, "k", "client")
    seed_hex = app.server_seed(round_id).hex()
    replies: list[str] = []
    play.seat_bets(driver, round_id, 200)
    driver.call("deal", round_id)
    while app.round_state(round_id).phase.value not in ("closed",):
        before_close = [c.result.model_dump_json() for c in driver.log]
        replies.extend(before_close)
        replies.append(app.get_round(round_id).model_dump_json())
        replies.append(json.dumps([n.model_dump() for n in app.read_notifications(0, 10_000)]))
        for text in replies:
            assert seed_hex not in text
        play.step(driver, round_id)
    revealed = app.get_round(round_id).server_seed
    assert revealed == seed_hex


# --- tampering with the stored rows ------------------------------------------------------------


class Rows:
    """One stream's stored rows (a round's, unless ``id`` is set to another stream): ``StoredRows`` bound to it."""

    def __init__(self, env: dict[str, str], round_id: str) -> None:
        self.rows = StoredRows(env)
        self.id = round_uuid(round_id)
        self.postgres = self.rows.postgres

    def read(self) -> list[tuple[int, str, dict[str, Any]]]:
        return self.rows.read(self.id)

    def write(self, version: int, state: dict[str, Any]) -> None:
        self.rows.write(self.id, version, state)

    def delete(self, version: int) -> None:
        self.rows.delete(self.id, version)

    def renumber(self, old: int, new: int) -> None:
        self.rows.renumber(self.id, old, new)

    def insert_copy(self, version: int, new_version: int) -> None:
        self.rows.insert_copy(self.id, version, new_version)


def _bet_version(rows: Rows) -> int:
    return next(v for v, topic, _s in rows.read() if topic.endswith("BetPlaced"))


def _data(state: dict[str, Any]) -> dict[str, Any]:
    data = state["data"]
    return data if isinstance(data, dict) else {}


def _edit_stake(rows: Rows) -> None:
    version = _bet_version(rows)
    state = next(s for v, _t, s in rows.read() if v == version)
    _data(state)["stake"] += 1
    rows.write(version, state)


def _edit_net_and_digest(rows: Rows) -> None:
    """A careful forger rewrites a payout and recomputes that event's own digest."""
    from pokdeng_service.store.codec import chain_digest

    records = rows.read()
    index = next(i for i, (_v, t, _s) in enumerate(records) if t.endswith("BetSettled"))
    version, _topic, state = records[index]
    previous = records[index - 1][2]["digest"]
    _data(state)["net"] += 100
    timestamp = state["timestamp"]
    stamp = timestamp["_data_"] if isinstance(timestamp, dict) else timestamp
    state["digest"] = chain_digest(previous, state["kind"], state["data"], version, state["command_id"], stamp)
    rows.write(version, state)


def _retime_and_rewrite_chain(rows: Rows) -> None:
    """A forger who moves an event's time and recomputes every digest after it: the round's
    own chain and replay hold (times are not replayed); only the table's pin catches it."""
    from pokdeng_service.store.codec import chain_digest

    def stamp(state: dict[str, Any]) -> str:
        timestamp = state["timestamp"]
        return str(timestamp["_data_"] if isinstance(timestamp, dict) else timestamp)

    records = rows.read()
    index = next(i for i, (_v, t, _s) in enumerate(records) if t.endswith("BetPlaced"))
    previous = records[index - 1][2]["digest"]
    for number, (version, _topic, state) in enumerate(records[index:]):
        if number == 0:
            state["timestamp"]["_data_"] = "2020-01-01T00:00:00+00:00"
        state["digest"] = chain_digest(
            previous, state["kind"], state["data"], version, state["command_id"], stamp(state)
        )
        previous = state["digest"]
        rows.write(version, state)


def _delete_middle(rows: Rows) -> None:
    rows.delete(_bet_version(rows))


def _delete_last(rows: Rows) -> None:
    rows.delete(rows.read()[-1][0])


def _insert_duplicate(rows: Rows) -> None:
    last = rows.read()[-1][0]
    rows.insert_copy(_bet_version(rows), last + 1)


def _reorder(rows: Rows) -> None:
    records = rows.read()
    a, b = records[-3][0], records[-2][0]
    rows.renumber(a, 10_000)
    rows.renumber(b, a)
    rows.renumber(10_000, b)


TAMPERING: dict[str, Callable[[Rows], None]] = {
    "edited": _edit_stake,
    "edited_with_own_digest": _edit_net_and_digest,
    "retimed_chain_rewritten": _retime_and_rewrite_chain,
    "deleted": _delete_middle,
    "deleted_tail": _delete_last,
    "inserted": _insert_duplicate,
    "reordered": _reorder,
}


@pytest.mark.parametrize("kind", sorted(TAMPERING))
@pytest.mark.each_store
def test_direct_row_tampering_is_detected(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], kind: str
) -> None:
    app = make_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(3)))
    round_id = play_rounds(d, "classic", 1, table=f"tamper-{kind}")[0]
    assert audit.verify_round(app, round_id, check_wallets=True).ok
    TAMPERING[kind](Rows(app_env, round_id))
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="0")
    verdict = audit.verify_round(fresh, round_id, check_wallets=True)
    assert not verdict.ok, verdict.render()
    assert verdict.first_difference
    if kind == "retimed_chain_rewritten":
        assert [c.name for c in verdict.checks if not c.ok] == ["table record"], verdict.render()


@pytest.mark.parametrize("kind", ["edited", "retimed_chain_rewritten", "deleted_tail", "reordered"])
@pytest.mark.each_store
def test_batch_verification_finds_the_one_tampered_round(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify_rounds`` (what ``pokdeng verify --all`` runs) reads table pins ahead over the
    batch, and the rounds' streams a few at a time: it still fails exactly the tampered round,
    whatever the order of the rounds, with the verdict ``verify_round`` gives on its own."""
    from pokdeng_service.audit import live

    app = make_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(8)))
    rounds = play_rounds(d, "classic", 5, table="batch-a") + play_rounds(d, "kingmaker", 5, table="batch-b")
    victim = rounds[6]
    TAMPERING[kind](Rows(app_env, victim))
    fresh = make_app(AGGREGATE_CACHE_MAXSIZE="0")
    alone = {r: audit.verify_round(fresh, r).as_dict() for r in rounds}
    assert not alone[victim]["ok"] and alone[victim]["first_difference"]
    for per_read in (live.ROUNDS_PER_READ, 3, 1):
        monkeypatch.setattr(live, "ROUNDS_PER_READ", per_read)
        for order in (rounds, list(reversed(rounds)), random.Random(kind).sample(rounds, len(rounds))):
            fresh = make_app(AGGREGATE_CACHE_MAXSIZE="0")
            verdicts = dict(zip(order, audit.verify_rounds(fresh, order), strict=True))
            failed = [r for r, v in verdicts.items() if not v.ok]
            assert failed == [victim], {r: verdicts[r].render() for r in failed}
            assert {r: v.as_dict() for r, v in verdicts.items()} == alone


@pytest.mark.each_store
def test_batch_verification_fails_a_bad_round_id_at_its_turn(make_app: Callable[..., PokdengApp]) -> None:
    """Rounds read ahead in a batch are verified in turn: an invalid or unknown round id raises
    (as ``verify_round`` does) when its turn comes, after the verdicts of the rounds before it."""
    from pokdeng_core.errors import InvalidCommand
    from pokdeng_service.application.errors import NotFound

    app = make_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(9)))
    rounds = play_rounds(d, "classic", 2, table="turns")
    for bad, error in (("turns#99", NotFound), ("a\x00round", InvalidCommand)):
        verdicts = audit.verify_rounds(make_app(), [rounds[0], bad, rounds[1]])
        assert next(verdicts).ok
        with pytest.raises(error):
            next(verdicts)


# --- bundles -----------------------------------------------------------------------------------


def test_bundle_verifies_offline_and_fails_on_any_single_byte_edit(app: PokdengApp, driver: play.Driver) -> None:
    round_id = play_rounds(driver, "kingmaker", 1)[0]
    raw = audit.bundle_bytes(audit.export_bundle(app, round_id))
    assert audit.verify_bundle(raw).ok
    rng = random.Random(5)
    positions = sorted(set(rng.sample(range(len(raw)), min(400, len(raw)))) | {0, len(raw) - 1, len(raw) // 2})
    for position in positions:
        edited = bytearray(raw)
        edited[position] = (edited[position] + 1 + rng.randrange(254)) % 256
        assert not audit.verify_bundle(bytes(edited)).ok, f"an edit at byte {position} went unnoticed"
    assert not audit.verify_bundle(raw[:-1]).ok
    assert not audit.verify_bundle(raw + b" ").ok


def test_bundle_has_everything_a_regulator_asks_for(app: PokdengApp, driver: play.Driver) -> None:
    round_id = play_rounds(driver, "room", 1)[0]
    bundle = audit.export_bundle(app, round_id)
    for key in (
        "profile",
        "engine_version",
        "shuffle",
        "decisions",
        "payouts",
        "settlement",
        "balances",
        "times",
        "events",
        "chain",
    ):
        assert bundle[key], key
    assert bundle["shuffle"]["deck_order"][:1]
    assert all(b["after"] - b["before"] == b["net"] for b in bundle["balances"])


def test_checkpoint_roots_and_inclusion_proofs(app: PokdengApp, driver: play.Driver) -> None:
    from pokdeng_service.store import merkle

    rounds = play_rounds(driver, "classic", 5, table="cp")
    assert app.inclusion_proof(rounds[0]) is None
    driver.call("checkpoint_table", "cp", "day 1")
    more = play_rounds(driver, "classic", 3, table="cp2")
    driver.call("checkpoint_table", "cp2")
    for round_id in [*rounds, *more]:
        proof = app.inclusion_proof(round_id)
        assert proof is not None
        leaf = bytes.fromhex(proof["leaf"])
        path = [bytes.fromhex(h) for h in proof["path"]]
        assert merkle.verify_inclusion(leaf, proof["index"], proof["size"], path, bytes.fromhex(proof["root"]))
        raw = audit.bundle_bytes(audit.export_bundle(app, round_id))
        verdict = audit.verify_bundle(raw)
        assert verdict.ok and any(c.name == "inclusion" for c in verdict.checks), verdict.render()
    with pytest.raises(Exception, match="no round has closed"):
        driver.call("checkpoint_table", "cp")


@pytest.mark.each_store
def test_table_record_is_found_whatever_the_audit_hint(app: PokdengApp, driver: play.Driver) -> None:
    """Seatings between rounds move each round's ``round_finished`` on in the table's stream;
    the audit's per-table hint of where to look is only a hint: wrong, stale or missing, every
    round still finds the table's pin of its last digest."""
    table_id = "hinted"
    round_ids = play_rounds(driver, "classic", 3, table=table_id)
    play.open_wallets(driver, [f"{table_id}-late"])
    for n in range(3):  # a player comes and goes between rounds: two more table events each time
        driver.call("take_seat", table_id, f"{table_id}-late", 4)
        driver.call("leave_seat", table_id, f"{table_id}-late", 4)
        round_id = play.start_round(driver, table_id, f"late-{n}")
        play.seat_bets(driver, round_id, 200)
        play.drive_round(driver, round_id)
        round_ids.append(round_id)
    for hint in (None, 0, 1, 2, 5, 1000, -3):
        if hint is None:
            app.audit_hints.pop(table_id, None)
        else:
            app.audit_hints[table_id] = hint
        for round_id in random.Random(hint).sample(round_ids, len(round_ids)):
            verdict = audit.verify_round(app, round_id, check_wallets=True)
            assert verdict.ok, verdict.render()
            if hint is not None:
                app.audit_hints[table_id] = hint  # the same wrong hint for every round


def test_replay_compares_payloads_by_their_json_form() -> None:
    """The replay's fast comparison (orjson of the core event against orjson of the stored
    payload) says what ``to_data`` says, for every kind of event of every profile."""
    import orjson

    from pokdeng_service.audit import replay as audit
    from pokdeng_service.store.codec import to_data

    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = play.Driver(app, chooser=play.Chooser(random.Random(5)))
    seen: set[str] = set()
    for profile in ("classic", "ante", "room", "kingmaker"):
        for round_id in play_rounds(d, profile, 8):
            facts = audit.core_facts(app.round_events(round_id))
            replayed, _ = audit.replay_events(facts)
            for stored, again in zip(facts, replayed, strict=True):
                assert orjson.dumps(again) == orjson.dumps(to_data(again))
                assert audit._same_data(stored.data, again)
                seen.add(again.kind)
                changed = dict(stored.data)
                key = next(iter(changed))
                changed[key] = [changed[key]]
                assert not audit._same_data(changed, again)
            # The whole round at once says what the events one by one say: the same, and not
            # the same with any one payload or kind changed, an event missing or one more.
            assert audit._same_round(facts, replayed)
            for index, stored in enumerate(facts):
                changed = dict(stored.data)
                key = next(iter(changed))
                changed[key] = [changed[key]]
                edited = [*facts[:index], cast(RecordedEvent, stored)._replace(data=changed), *facts[index + 1 :]]
                assert not audit._same_round(edited, replayed)
                renamed = [*facts[:index], cast(RecordedEvent, stored)._replace(kind="other"), *facts[index + 1 :]]
                assert not audit._same_round(renamed, replayed)
                reordered = {k: stored.data[k] for k in reversed(stored.data)}  # equal, not the same bytes
                if len(reordered) > 1:
                    edited = [*facts[:index], cast(RecordedEvent, stored)._replace(data=reordered), *facts[index + 1 :]]
                    assert not audit._same_round(edited, replayed)
                    assert audit._same_data(reordered, replayed[index])  # (then compared one by one)
            assert not audit._same_round(facts[:-1], replayed) and not audit._same_round(facts, replayed[:-1])
    assert len(seen) >= 12, seen


@pytest.mark.each_store
def test_rounds_of_an_older_profile_and_engine_version_still_replay(
    app: PokdengApp, driver: play.Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds recorded by an older engine, under a profile version that has since been
    superseded, replay bit for bit under the rules they were played with; the verdict
    names both engines, and the bundles still verify offline."""
    from pokdeng_core import profiles, round_opening
    from pokdeng_service.store import aggregates

    with monkeypatch.context() as old_engine:
        old_engine.setattr(round_opening, "ENGINE_VERSION", "0.9.0")
        old_engine.setattr(aggregates, "ENGINE_VERSION", "0.9.0")
        old_rounds = play_rounds(driver, "classic", 6, table="v1-table")
    # classic v2: a 5% commission on a winning player's gross (a rules change is a new version)
    v2 = profiles.CLASSIC_V1.model_copy(update={"version": 2, "player_commission": "1/20"})
    monkeypatch.setitem(profiles.PRESETS, "classic", {1: profiles.CLASSIC_V1, 2: v2})
    monkeypatch.setattr(profiles, "_CACHE", {})
    assert profiles.get_profile("classic").version == 2
    new_rounds = play_rounds(driver, "classic", 6, table="v2-table")
    for n in range(2):  # a table keeps the profile version it was opened with
        round_id = play.start_round(driver, "v1-table", f"later-{n}")
        play.seat_bets(driver, round_id, 200)
        play.drive_round(driver, round_id)
        old_rounds.append(round_id)

    def commissions(round_id: str) -> int:
        return sum(e.data["commission"] for e in app.round_events(round_id) if e.kind == "bet_settled")

    opened = {r: next(e for e in app.round_events(r) if e.kind == "round_opened").data for r in old_rounds + new_rounds}
    assert {opened[r]["profile_version"] for r in old_rounds} == {1}
    assert {opened[r]["engine_version"] for r in old_rounds[:6]} == {"0.9.0"}
    assert {opened[r]["profile_version"] for r in new_rounds} == {2}
    assert sum(commissions(r) for r in old_rounds) == 0 < sum(commissions(r) for r in new_rounds)
    for round_id in old_rounds:
        verdict = audit.verify_round(app, round_id, check_wallets=True)
        assert verdict.ok, verdict.render()
        bundle = audit.export_bundle(app, round_id)
        assert bundle["profile"]["version"] == 1
        if round_id in old_rounds[:6]:
            engine = next(c for c in verdict.checks if c.name == "engine")
            assert "0.9.0" in engine.detail and "classic v1" in engine.detail
            assert bundle["engine_version"] == "0.9.0"
        offline = audit.verify_bundle(audit.bundle_bytes(bundle))
        assert offline.ok, offline.render()
    for round_id in new_rounds:
        verdict = audit.verify_round(app, round_id, check_wallets=True)
        assert verdict.ok and not any(c.name == "engine" for c in verdict.checks), verdict.render()


@pytest.mark.parametrize("stored_as", ["zlib", "aes"])
def test_verification_reads_compressed_or_encrypted_rows_through_the_library(tmp_path: Any, stored_as: str) -> None:
    """Audits decode plain JSON rows themselves; rows the library compressed or encrypted are
    decoded by its mapper instead, with the same result."""
    from eventsourcing.cryptography import AESCipher  # (on the cryptography package, a dependency)

    from pokdeng_service.store import fastpaths as facts
    from pokdeng_service.store.facts import fact_of

    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "packed.sqlite")}
    if stored_as == "zlib":
        env["COMPRESSOR_TOPIC"] = "eventsourcing.compressor:ZlibCompressor"
    else:
        env["CIPHER_TOPIC"] = "eventsourcing.cryptography:AESCipher"
        env["CIPHER_KEY"] = AESCipher.create_key(num_bytes=32)
    app = play.make_app(env)
    try:
        assert app.mapper.compressor is not None or app.mapper.cipher is not None
        d = play.Driver(app, chooser=play.Chooser(random.Random(6)))
        rounds = play_rounds(d, "kingmaker", 4, table="packed")
        for round_id in rounds:
            rows = app.recorder.select_events(round_uuid(round_id))
            assert facts.plain_fact(rows[1]) is None  # not plain JSON: the library decodes it
            assert audit.verify_round(app, round_id, check_wallets=True).ok
        assert all(v.ok for v in audit.verify_rounds(app, rounds))
        assert [tuple(f) for f in audit.round_facts(app, rounds[0])] == [
            tuple(fact_of(e)) for e in app.events.get(round_uuid(rounds[0]))
        ]
    finally:
        app.close()
