"""The API's standard methods and typed events, over a real server (issue #14).

* typed events: every event's typed member maps back to its stored data, and its chain digest is
  recomputed from the typed message alone (rounds, tables, wallets), for all four profiles;
* ListTables, ListWallets, ListRounds: page tokens walk every item once, in order, and a token
  is bound to its method and filter;
* GetRound's views, legal commands with their parameters;
* WatchRound and WatchTable: what a player may see, resuming from a token, the end of a round;
* currencies: a wallet stakes only at a table of its currency; codes are ISO 4217 with minor units.
"""

from __future__ import annotations

import base64
import json
import random
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from pokdeng_client import chain, events
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.errors import details_of
from pokdeng_service.readmodels import ReadModels

from .client import (
    Choices,
    bet,
    error_of,
    kind_of,
    open_table,
    open_wallets,
    play_round,
    seat,
    start_round,
)
from .conftest import Served, StartServer, make_app, sqlite_env

PROFILES = (pb.PROFILE_CLASSIC, pb.PROFILE_ANTE, pb.PROFILE_ROOM, pb.PROFILE_KINGMAKER)


@pytest.fixture
def indexed(tmp_path: Path, start_server: StartServer) -> Iterator[Served]:
    """A server with read models (the List methods read them)."""
    env = sqlite_env(tmp_path)
    app = make_app(env)
    models = ReadModels(env)
    served = start_server(app, read_models=models)
    served.models = models  # type: ignore[attr-defined]
    yield served
    models.stop()


def _play_each_profile(served: Served) -> dict[int, str]:
    """One closed round of every profile; the round id by profile."""
    ops, players = served.api("operator"), served.players()
    open_wallets(ops, ["alice", "bob", "carol", "dave"])
    closed: dict[int, str] = {}
    for profile in PROFILES:
        name = pb.Profile.Name(profile).removeprefix("PROFILE_").lower()
        if profile == pb.PROFILE_ANTE:
            open_table(ops, name, profile, min_stake=100, max_stake=1000, seats=0)
        elif profile == pb.PROFILE_ROOM:
            open_table(ops, name, profile, min_stake=100, max_stake=100, seats=4)
        else:
            open_table(ops, name, profile, min_stake=100, max_stake=1000, seats=4)
        if profile != pb.PROFILE_ANTE:
            for number, who in enumerate(("alice", "bob", "dave"), start=1):
                seat(players[who], name, who, number)
        if profile == pb.PROFILE_ROOM:
            for who, rounds in (("alice", 0), ("bob", 0), ("dave", 10)):
                players[who].cmd(
                    "TableService", "BidForBanker", pb.BidForBankerRequest(table_id=name, player=who, rounds=rounds)
                )
            ops.cmd("TableService", "CloseBankerBid", pb.CloseBankerBidRequest(table_id=name))
        round_id = start_round(ops, name).round_id
        for number, who in enumerate(("alice", "bob"), start=1):
            bet(players[who], round_id, number, who, 100)
        closed[profile] = play_round(ops, players, round_id, Choices(random.Random(profile))).round_id
    return closed


def test_typed_events_map_back_to_their_data_and_their_digests_recompute(local: Served) -> None:
    closed = _play_each_profile(local)
    auditor = local.api("auditor")
    for profile, round_id in closed.items():
        round_ = auditor.get("RoundService", "GetRound", pb.GetRoundRequest(round_id=round_id)).round
        assert round_.outcome == pb.ROUND_OUTCOME_SETTLED and round_.currency.code == "THB"
        assert round_.currency.exponent == 2 and round_.close_time.seconds >= round_.open_time.seconds > 0
        previous = chain.genesis(round_id)
        kinds = set()
        for event in round_.events:
            member = event.WhichOneof("event")
            assert member is not None and event.kind == events.event_kind(member), event
            assert events.data_of(getattr(event, member)) == json.loads(event.canonical_data), member
            if event.sequence == 1:  # the stream's creation: not part of the chain
                assert member == "round_record_started" and not event.chain_digest
                continue
            assert chain.link(previous, event) == event.chain_digest, (profile, member)
            previous = event.chain_digest
            kinds.add(member)
        assert {"round_opened", "shuffle_committed", "bet_settled", "round_settled", "round_closed"} <= kinds
        settled = [e.bet_settled for e in round_.events if e.HasField("bet_settled")]
        assert all(s.outcome != pb.BET_OUTCOME_UNSPECIFIED and s.multiplier.denominator > 0 for s in settled)
        if profile == pb.PROFILE_KINGMAKER:  # 0.95x payouts: an exact fraction, not a float
            wins = [s for s in settled if s.outcome == pb.BET_OUTCOME_PLAYER_WINS]
            assert all((s.multiplier.numerator, s.multiplier.denominator) != (0, 0) for s in wins)


def test_a_table_and_a_wallet_chain_recompute_from_typed_events(local: Served) -> None:
    ops = local.api("operator")
    opened = ops.cmd("WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id="ann", currency_code="USD"))
    assert opened.wallet.currency.code == "USD" and opened.wallet.currency.exponent == 2
    previous = chain.genesis("wallet:ann")
    for amount in (500, 700):
        answer = ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="ann", amount=amount))
        (event,) = answer.events
        assert kind_of(event) == "wallet_deposited" and event.wallet_deposited.amount == amount
        assert event.wallet_after.balance == answer.wallet.balance
        assert chain.link(previous, event) == event.chain_digest
        previous = event.chain_digest
    table = open_table(ops, "w", pb.PROFILE_CLASSIC, seats=3)
    assert table.turn_timeout.seconds == 30 and table.currency.code == "THB"
    watched = list(
        _take(
            ops.method("TableService", "WatchTable")(
                pb.WatchTableRequest(table_id="w"), metadata=ops.metadata, timeout=10
            ),
            1,
        )
    )
    previous = chain.genesis("table:w")
    for item in watched:
        assert kind_of(item.event) == "table_opened" and item.event.table_opened.profile_name == pb.PROFILE_CLASSIC
        assert chain.link(previous, item.event) == item.event.chain_digest


def _take(stream: Iterator[pb.WatchTableResponse], count: int) -> list[pb.WatchTableResponse]:
    out = []
    for item in stream:
        if item.HasField("event"):
            out.append(item)
        if len(out) == count:
            stream.cancel()  # type: ignore[attr-defined]
            break
    return out


def test_list_tables_and_wallets_page_through_everything_once(indexed: Served) -> None:
    ops = indexed.api("operator")
    names = [f"p{n:02d}" for n in range(7)]
    open_wallets(ops, names, 100)
    for name in names:
        open_table(ops, name, pb.PROFILE_KINGMAKER if name == "p03" else pb.PROFILE_CLASSIC, seats=2)
    indexed.models.catch_up(indexed.app)  # type: ignore[attr-defined]
    for method, request_type, field in (
        ("ListTables", pb.ListTablesRequest, "tables"),
        ("ListWallets", pb.ListWalletsRequest, "wallets"),
    ):
        service = "TableService" if method == "ListTables" else "WalletService"
        seen: list[str] = []
        token = ""
        pages = 0
        while True:
            answer = ops.get(service, method, request_type(page_size=3, page_token=token))
            seen += [item.table_id if field == "tables" else item.wallet_id for item in getattr(answer, field)]
            pages += 1
            token = answer.next_page_token
            if not token:
                break
        assert seen == names and pages == 3, (method, seen)
    kingmaker = ops.get("TableService", "ListTables", pb.ListTablesRequest(profile=pb.PROFILE_KINGMAKER))
    assert [t.table_id for t in kingmaker.tables] == ["p03"] and kingmaker.tables[0].currency.code == "THB"
    first = ops.get("TableService", "ListTables", pb.ListTablesRequest(page_size=2))
    for token in (first.next_page_token[:-2] + "xx", "not a token", first.next_page_token + "A"):
        bad = details_of(
            error_of(lambda t=token: ops.get("TableService", "ListTables", pb.ListTablesRequest(page_token=t)))
        )
        assert bad.code == grpc.StatusCode.INVALID_ARGUMENT and [v.field for v in bad.field_violations] == [
            "page_token"
        ]
    other_filter = pb.ListTablesRequest(page_token=first.next_page_token, profile=pb.PROFILE_CLASSIC)
    assert (
        details_of(error_of(lambda: ops.get("TableService", "ListTables", other_filter))).code
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    wrong_method = pb.ListWalletsRequest(page_token=first.next_page_token)
    assert (
        error_of(lambda: ops.get("WalletService", "ListWallets", wrong_method)).code()
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    denied = error_of(lambda: indexed.api("alice").get("WalletService", "ListWallets", pb.ListWalletsRequest()))
    assert denied.code() == grpc.StatusCode.PERMISSION_DENIED
    negative = details_of(error_of(lambda: ops.get("TableService", "ListTables", pb.ListTablesRequest(page_size=-1))))
    assert [v.field for v in negative.field_violations] == ["page_size"]


def test_list_rounds_filters_and_pages_newest_first(indexed: Served) -> None:
    ops, players = indexed.api("operator"), indexed.players()
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "r", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
    ids = []
    for n in range(5):
        round_id = start_round(ops, "r").round_id
        bet(players["alice"], round_id, 1, "alice", 100)
        if n == 2:
            ops.cmd("RoundService", "VoidRound", pb.VoidRoundRequest(round_id=round_id, reason="test"))
        else:
            if n % 2:
                bet(players["bob"], round_id, 2, "bob", 100)
            ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        ids.append(round_id)
    indexed.models.catch_up(indexed.app)  # type: ignore[attr-defined]
    seen, token = [], ""
    while True:
        answer = ops.get(
            "RoundService", "ListRounds", pb.ListRoundsRequest(table_id="r", page_size=2, page_token=token)
        )
        assert all(not r.events for r in answer.rounds)  # the BASIC view by default
        seen += [r.round_id for r in answer.rounds]
        token = answer.next_page_token
        if not token:
            break
    assert seen == list(reversed(ids))
    voided = ops.get("RoundService", "ListRounds", pb.ListRoundsRequest(outcome=pb.ROUND_OUTCOME_VOIDED))
    assert [r.round_id for r in voided.rounds] == [ids[2]] and voided.rounds[0].outcome == pb.ROUND_OUTCOME_VOIDED
    bobs = players["bob"].get("RoundService", "ListRounds", pb.ListRoundsRequest(view=pb.ROUND_VIEW_FULL))
    assert [r.round_id for r in bobs.rounds] == [ids[3], ids[1]] and all(r.events for r in bobs.rounds)
    third = ops.round(ids[3])
    window = pb.ListRoundsRequest(close_time_start=third.close_time, close_time_end=ops.round(ids[4]).close_time)
    assert [r.round_id for r in ops.get("RoundService", "ListRounds", window).rounds] == [ids[3]]
    basic = ops.get("RoundService", "GetRound", pb.GetRoundRequest(round_id=ids[0], view=pb.ROUND_VIEW_BASIC)).round
    assert not basic.events and basic.phase == pb.ROUND_PHASE_CLOSED and ops.round(ids[0]).events


def test_legal_commands_carry_their_parameters(local: Served) -> None:
    ops, players = local.api("operator"), local.players()
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "a", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
    round_id = start_round(ops, "a").round_id
    legal = ops.get("RoundService", "GetLegalCommands", pb.GetLegalCommandsRequest(round_id=round_id, seat=1))
    (place,) = [c for c in legal.commands if c.kind == pb.COMMAND_KIND_PLACE_BET]
    assert (list(place.seats), place.min_amount, place.max_amount, place.even_amount) == ([1], 100, 1000, True)
    # found from the outside: an ante bettor could not ask at all (its positions have no holder); a player
    # may ask about a position of a round it takes part in (a round's reader: docs/api.md)
    ask = pb.GetLegalCommandsRequest(round_id=round_id, seat=2)
    stranger = error_of(lambda: players["alice"].get("RoundService", "GetLegalCommands", ask))
    assert stranger.code() == grpc.StatusCode.PERMISSION_DENIED
    bet(players["alice"], round_id, 1, "alice", 200)
    alice_asks = players["alice"].get("RoundService", "GetLegalCommands", ask)
    assert [c.kind for c in alice_asks.commands] == [pb.COMMAND_KIND_PLACE_BET]
    for request in (
        pb.GetLegalCommandsRequest(round_id=round_id),
        pb.GetLegalCommandsRequest(round_id=round_id, seat=0),
    ):
        denied = error_of(lambda r=request: players["alice"].get("RoundService", "GetLegalCommands", r))
        assert denied.code() == grpc.StatusCode.PERMISSION_DENIED  # the operator's list, the house's hand
    open_table(ops, "k", pb.PROFILE_CLASSIC, min_stake=100, max_stake=1000, seats=3)
    seat(players["alice"], "k", "alice", 1)
    seat(players["bob"], "k", "bob", 2)
    for _ in range(40):  # until a round stops at the players' turns
        round_id = start_round(ops, "k").round_id
        bet(players["alice"], round_id, 1, "alice", 100)
        bet(players["bob"], round_id, 2, "bob", 100)
        dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id)).round
        if dealt.phase == pb.ROUND_PHASE_PLAYER_TURNS:
            break
        play_round(ops, players, round_id, Choices(random.Random(0)))
    turn = dealt.turn
    holder = players["alice" if turn == 1 else "bob"]
    mine = holder.get("RoundService", "GetLegalCommands", pb.GetLegalCommandsRequest(round_id=round_id, seat=turn))
    assert {c.kind for c in mine.commands} == {pb.COMMAND_KIND_DRAW, pb.COMMAND_KIND_STAY}
    assert all(list(c.seats) == [turn] for c in mine.commands)
    operator = ops.get("RoundService", "GetLegalCommands", pb.GetLegalCommandsRequest(round_id=round_id))
    (timeout,) = [c for c in operator.commands if c.kind == pb.COMMAND_KIND_TIME_OUT_TURN]
    assert timeout.expected_version == ops.round(round_id).version > 0


def test_a_player_watches_a_round_without_seeing_other_hands_and_resumes(local: Served) -> None:
    ops, players = local.api("operator"), local.players()
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "v", pb.PROFILE_CLASSIC, min_stake=100, max_stake=1000, seats=3)
    seat(players["alice"], "v", "alice", 1)
    seat(players["bob"], "v", "bob", 2)
    round_id = start_round(ops, "v").round_id
    alice = players["alice"]
    watch = alice.method("RoundService", "WatchRound")
    stream = watch(pb.WatchRoundRequest(round_id=round_id), metadata=alice.metadata, timeout=30)
    received: list[pb.WatchRoundResponse] = []
    done = threading.Event()

    def follow() -> None:
        for item in stream:
            if item.HasField("event"):
                received.append(item)
        done.set()

    threading.Thread(target=follow, daemon=True).start()
    bet(alice, round_id, 1, "alice", 100)
    bet(players["bob"], round_id, 2, "bob", 100)
    ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
    play_round(ops, players, round_id, Choices(random.Random(5)))
    assert done.wait(15), "the stream did not end after round_closed"
    kinds = [kind_of(r.event) for r in received]
    assert kinds[0] == "round_opened" and kinds[-1] == "round_closed" and "bet_placed" in kinds
    sequences = [r.event.sequence for r in received]
    assert sequences == sorted(set(sequences))  # once each, in order
    dealt = next(r.event for r in received if kind_of(r.event) == "cards_dealt")
    cards = {(c.seat, i): c.card for i, c in enumerate(dealt.cards_dealt.cards)}
    assert all(card for (s, _i), card in cards.items() if s == 1)  # her own cards
    if dealt.redacted:
        assert any(not card for (s, _i), card in cards.items() if s != 1) and not dealt.canonical_data
    # resume after the fourth event: the rest, nothing repeated
    again = watch(
        pb.WatchRoundRequest(round_id=round_id, resume_token=received[3].resume_token),
        metadata=alice.metadata,
        timeout=10,
    )
    rest = [r.event.sequence for r in again if r.HasField("event")]
    assert rest == sequences[4:]
    bad = error_of(
        lambda: list(watch(pb.WatchRoundRequest(round_id=round_id, resume_token="x"), metadata=alice.metadata))
    )
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    # found from the outside: an edited cursor was accepted (0: the stream's creation, which is never sent;
    # past the end: events skipped). Tokens carry a MAC now: an edited one is refused, on resume_token
    body, _dot, mac = received[3].resume_token.rpartition(".")
    fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    for cursor in (0, None, 10**6):
        edited = base64.urlsafe_b64encode(json.dumps({**fields, "c": cursor}).encode()).decode().rstrip("=")
        request = pb.WatchRoundRequest(round_id=round_id, resume_token=f"{edited}.{mac}")
        refused = details_of(error_of(lambda r=request: list(watch(r, metadata=alice.metadata, timeout=5))))
        assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, refused
        assert [v.field for v in refused.field_violations] == ["resume_token"], refused
    missing = error_of(lambda: list(watch(pb.WatchRoundRequest(round_id="v#99"), metadata=alice.metadata, timeout=5)))
    assert missing.code() == grpc.StatusCode.NOT_FOUND


def test_a_table_watch_shows_table_facts_and_hides_another_bidders_capital(local: Served) -> None:
    ops, players = local.api("operator"), local.players()
    open_wallets(ops, {"alice": 5_000, "dave": 90_000})
    open_table(ops, "room", pb.PROFILE_ROOM, min_stake=100, max_stake=100, seats=4)
    seat(players["alice"], "room", "alice", 1)
    seat(players["dave"], "room", "dave", 2)
    players["alice"].cmd(
        "TableService", "BidForBanker", pb.BidForBankerRequest(table_id="room", player="alice", rounds=5)
    )
    players["dave"].cmd(
        "TableService", "BidForBanker", pb.BidForBankerRequest(table_id="room", player="dave", rounds=10)
    )
    ops.cmd("TableService", "CloseBankerBid", pb.CloseBankerBidRequest(table_id="room"))
    ops.cmd("TableService", "LeaveSeat", pb.LeaveSeatRequest(table_id="room", player="alice"))
    alice = players["alice"]
    stream = alice.method("TableService", "WatchTable")(
        pb.WatchTableRequest(table_id="room"), metadata=alice.metadata, timeout=10
    )
    version = ops.table("room").version
    facts = [item.event for item in _take(stream, version - 1)]
    kinds = [kind_of(e) for e in facts]
    assert {"banker_bid_placed", "banker_assigned", "player_left"} <= set(kinds), kinds
    bids = {e.banker_bid_placed.player: e for e in facts if kind_of(e) == "banker_bid_placed"}
    assert bids["alice"].banker_bid_placed.capital == 5_000 and not bids["alice"].redacted
    assert bids["dave"].banker_bid_placed.capital == 0 and bids["dave"].redacted and not bids["dave"].canonical_data
    left = next(e.player_left for e in facts if kind_of(e) == "player_left")
    assert left.reason in (pb.LEAVE_REASON_LEFT, pb.LEAVE_REASON_BECAME_BANKER)
    # no chain digest for a player: found from the outside, a digest (dave's bid's, or any later one)
    # let anyone try capitals until one matched; the operator's watch has them all
    assert not any(e.chain_digest for e in facts)
    watched = ops.method("TableService", "WatchTable")(
        pb.WatchTableRequest(table_id="room"), metadata=ops.metadata, timeout=10
    )
    assert all(item.event.chain_digest for item in _take(watched, version - 1))


def test_a_wallet_stakes_only_in_its_own_currency(local: Served) -> None:
    ops, players = local.api("operator"), local.players()
    ops.cmd("WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id="alice", currency_code="JPY"))
    ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="alice", amount=10_000))
    assert ops.wallet("alice").currency == pb.Currency(code="JPY", exponent=0)
    open_wallets(ops, ["bob"])
    table = ops.cmd(
        "TableService",
        "OpenTable",
        pb.OpenTableRequest(
            table_id="yen",
            profile=pb.PROFILE_ANTE,
            min_stake=100,
            max_stake=1000,
            turn_timeout=cast(Any, timedelta(seconds=20)),
            currency_code="JPY",
        ),
    ).table
    assert table.currency.code == "JPY" and table.turn_timeout.seconds == 20
    round_id = start_round(ops, "yen").round_id
    assert ops.round(round_id).currency.code == "JPY"
    bet(players["alice"], round_id, 1, "alice", 100)
    refused = details_of(error_of(lambda: bet(players["bob"], round_id, 2, "bob", 100)))  # bob holds THB
    assert refused.code == grpc.StatusCode.FAILED_PRECONDITION and refused.reason == "CURRENCY_MISMATCH"
    for code in ("thb", "XAU", "ZZZ", "BAHT"):
        bad = details_of(
            error_of(
                lambda c=code: ops.cmd(
                    "WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id="x", currency_code=c)
                )
            )
        )
        assert bad.code == grpc.StatusCode.INVALID_ARGUMENT and [v.field for v in bad.field_violations] == [
            "currency_code"
        ]
    half = pb.OpenTableRequest(
        table_id="t2",
        profile=pb.PROFILE_ANTE,
        min_stake=100,
        max_stake=1000,
        turn_timeout=cast(Any, timedelta(seconds=1.5)),
    )
    fraction = details_of(error_of(lambda: ops.cmd("TableService", "OpenTable", half)))
    assert [v.field for v in fraction.field_violations] == ["turn_timeout"]
    too_much = details_of(
        error_of(lambda: ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="bob", amount=2**53)))
    )
    assert too_much.code == grpc.StatusCode.INVALID_ARGUMENT and [v.field for v in too_much.field_violations] == [
        "amount"
    ]


def test_api_lists_without_read_models_say_so(local: Served) -> None:
    ops = local.api("operator")
    refused = details_of(error_of(lambda: ops.get("TableService", "ListTables", pb.ListTablesRequest())))
    assert refused.code == grpc.StatusCode.FAILED_PRECONDITION and refused.reason == "NO_READ_MODELS"


def test_the_client_package_plays_without_the_server_package(local: Served) -> None:
    """``pokdeng_client`` (what the README shows) needs nothing of ``pokdeng_service``."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pokdeng_client import PokdengClient\n"
        "from pokdeng_client.v1 import pokdeng_pb2 as pb\n"
        f"with PokdengClient('127.0.0.1:{local.port}', token=sys.argv[1]) as c:\n"
        "    c.call('WalletService', 'OpenWallet', wallet_id='zed', currency_code='EUR')\n"
        "    w = c.call('WalletService', 'GetWallet', wallet_id='zed').wallet\n"
        "    assert w.currency.code == 'EUR'\n"
        "assert not [m for m in sys.modules if m.startswith('pokdeng_service') or m.startswith('pokdeng_core')]\n"
        "print('ok')\n"
    )
    from .client import TOKENS

    out = subprocess.run([sys.executable, "-c", code, TOKENS["operator"]], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_an_enum_value_the_api_does_not_define_is_refused_not_ignored(indexed: Served) -> None:
    """Found from the outside: ``ListTables{profile: 99}`` listed every table and ``ListRounds{outcome: 99}``
    every outcome, as if no filter were set; a client built on a newer proto would get unfiltered data."""
    ops = indexed.api("operator")
    open_table(ops, "f", pb.PROFILE_CLASSIC, seats=2)
    for service, method, request, field in (
        ("TableService", "ListTables", pb.ListTablesRequest(profile=99), "profile"),  # type: ignore[arg-type]
        ("RoundService", "ListRounds", pb.ListRoundsRequest(table_id="f", outcome=99), "outcome"),  # type: ignore[arg-type]
        ("RoundService", "ListRounds", pb.ListRoundsRequest(table_id="f", view=7), "view"),  # type: ignore[arg-type]
        ("RoundService", "GetRound", pb.GetRoundRequest(round_id="f#1", view=7), "view"),  # type: ignore[arg-type]
    ):
        refused = details_of(error_of(lambda s=service, m=method, r=request: ops.get(s, m, r)))
        assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, (method, refused)
        assert [v.field for v in refused.field_violations] == [field], (method, refused)
    # and the defined values still filter
    indexed.models.catch_up(indexed.app)  # type: ignore[attr-defined]
    listed = ops.get("TableService", "ListTables", pb.ListTablesRequest(profile=pb.PROFILE_CLASSIC))
    assert [t.table_id for t in listed.tables] == ["f"]
    assert not ops.get("TableService", "ListTables", pb.ListTablesRequest(profile=pb.PROFILE_ANTE)).tables


def test_tokens_are_the_services_own_and_every_replica_takes_them() -> None:
    """A token is authenticated with a key derived from the vault key: replicas (which share the vault key)
    accept one another's tokens; a token made under another key, or edited, is refused."""
    from pokdeng_service.api import paging
    from pokdeng_service.application.errors import RequestInvalid
    from pokdeng_service.store.vault import SeedVault

    key = "11" * 32
    one, other, stranger = SeedVault.from_hex(key), SeedVault.from_hex(key), SeedVault.ephemeral()
    assert one.token_key == other.token_key != stranger.token_key
    token = paging.encode("ListTables", {"profile": None}, "t-7", one.token_key)
    assert paging.decode("ListTables", {"profile": None}, token, other.token_key) == "t-7"
    for key_used, sent in (
        (stranger.token_key, token),
        (one.token_key, token[:-1] + ("A" if token[-1] != "A" else "B")),
        (one.token_key, token.rpartition(".")[0]),
        (one.token_key, token.rpartition(".")[0] + ".\u00e9"),  # (a MAC not in ASCII: refused, not a crash)
    ):
        with pytest.raises(RequestInvalid) as refused:
            paging.decode("ListTables", {"profile": None}, sent, key_used)
        assert [v.field for v in refused.value.violations] == ["page_token"]
