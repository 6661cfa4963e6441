"""Access control for every role: operator, player, auditor, and no token at all."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import grpc
import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import auth
from pokdeng_service.api.errors import details_of
from pokdeng_service.auth import Principal, Role, TokenConfigError, TokenStore, bearer_token, token_digest

from .client import (
    SERVICE_OF,
    Api,
    Choices,
    bet,
    error_of,
    kind_of,
    open_table,
    open_wallets,
    payload,
    play_round,
    seat,
    start_round,
)
from .conftest import Served

Code = grpc.StatusCode
SERVICES = pb.DESCRIPTOR.services_by_name
ALL_METHODS = [(s.name, m) for s in SERVICES.values() for m in s.methods]
EMPTY = {m.full_name: m for _s, m in ALL_METHODS}


def _request(method: object) -> object:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(method.input_type)()  # type: ignore[attr-defined]


def _call(api: Api, service: str, method: object) -> grpc.StatusCode | None:
    """Call ``method`` with an empty request; the status code, or None on success."""
    try:
        answer = api.method(service, method.name)(_request(method), metadata=api.metadata, timeout=10)  # type: ignore[attr-defined]
        if method.server_streaming:  # type: ignore[attr-defined]
            next(iter(answer))
    except grpc.RpcError as error:
        return error.code()
    return None


# --- configuration -----------------------------------------------------------------------------


def test_every_method_has_a_rule() -> None:
    methods = {f"/{m.full_name.rsplit('.', 1)[0]}/{m.name}" for _s, m in ALL_METHODS}
    assert methods == set(auth.METHOD_ROLES)
    reads = {
        "GetWallet",
        "ListStatementEntries",
        "GetTable",
        "ListTables",
        "WatchTable",
        "GetRound",
        "ListRounds",
        "GetLegalCommands",
        "WatchRound",
        "ListWallets",
    }
    reads |= {"ReplayRound", "VerifyRound", "ExportRound", "GetInclusionProof", "SubscribeEvents"}
    for name, roles in auth.METHOD_ROLES.items():
        method = name.rsplit("/", 1)[1]
        assert (Role.AUDITOR in roles) == (method in reads), name
        assert Role.OPERATOR in roles, name


def test_token_files_hold_digests_only(tmp_path: Path) -> None:
    entries = [
        {"token_sha256": token_digest("op-secret-1"), "role": "operator", "name": "ops"},
        {"token_sha256": token_digest("al-secret-2"), "role": "player", "player": "alice"},
        {"token_sha256": token_digest("au-secret-3").upper(), "role": "auditor"},
    ]
    (tmp_path / "tokens.json").write_text(json.dumps({"tokens": entries}))
    toml = "".join("[[tokens]]\n" + "".join(f'{k} = "{v}"\n' for k, v in e.items()) for e in entries)
    (tmp_path / "tokens.toml").write_text(toml)
    for name in ("tokens.json", "tokens.toml"):
        (tmp_path / name).chmod(0o600)  # (secret files: their owner's alone, tests/cli/test_secret_files.py)
    for name in ("tokens.json", "tokens.toml"):
        store = TokenStore.from_file(tmp_path / name)
        assert len(store) == 3 and store.development_token is None
        assert store.authenticate("op-secret-1") == Principal(Role.OPERATOR, None, "ops")
        assert store.authenticate("al-secret-2") == Principal(Role.PLAYER, "alice")
        assert store.authenticate("au-secret-3") == Principal(Role.AUDITOR)
        assert store.authenticate("nope") is None and store.authenticate("") is None
        assert not any(t in repr(vars(store)) for t in ("op-secret-1", "al-secret-2", "au-secret-3"))


@pytest.mark.parametrize(
    "entries, complaint",
    [
        ([], "non-empty"),
        ([{"token_sha256": "0" * 64, "role": "admin"}], "role must be"),
        ([{"token_sha256": "0" * 64, "role": "player"}], "names its player"),
        ([{"token_sha256": "0" * 64, "role": "auditor", "player": "x"}], "name none"),
        ([{"token_sha256": "short", "role": "operator"}], "64 lowercase hex"),
        ([{"token_sha256": "0" * 64, "role": "operator", "secret": "x"}], "unknown keys"),
        ([{"token_sha256": "0" * 64, "role": "operator"}] * 2, "twice"),
    ],
)
def test_bad_token_configuration_is_refused(entries: list[dict[str, str]], complaint: str) -> None:
    with pytest.raises(TokenConfigError, match=complaint):
        TokenStore.from_mapping({"tokens": entries})


def test_development_mode_prints_one_operator_token_once() -> None:
    out = io.StringIO()
    store = TokenStore.development(out)
    token = store.development_token
    assert token and out.getvalue().count(token) == 1
    assert store.authenticate(token) == Principal(Role.OPERATOR, None, "development")
    assert TokenStore.development(show=False).development_token != token


def test_bearer_metadata_parsing() -> None:
    assert bearer_token([("authorization", "Bearer abc")]) == "abc"
    assert bearer_token([("Authorization", "bearer   abc  ")]) == "abc"
    assert bearer_token([("authorization", "Basic abc")]) is None
    assert bearer_token([("authorization", "Bearer ")]) is None
    assert bearer_token([("x-other", "Bearer abc")]) is None
    assert bearer_token(None) is None


def test_the_token_maker(capsys: pytest.CaptureFixture[str]) -> None:
    assert auth.main(["new", "--role", "player", "--player", "alice"]) == 0
    out = capsys.readouterr().out
    token = out.split("it is not stored): ", 1)[1].split()[0]
    entry = json.loads(out.split("entry for the token file: ", 1)[1])
    assert TokenStore.from_mapping([entry]).authenticate(token) == Principal(Role.PLAYER, "alice")
    assert auth.main(["new", "--role", "player"]) == 2


# --- through the server ------------------------------------------------------------------------


def test_no_token_or_a_bad_token_is_unauthenticated(local: Served) -> None:
    for api in (local.api(None), local.api("operator", token="wrong"), local.api("operator", token="x" * 5000)):
        for service, method in ALL_METHODS:
            assert _call(api, service, method) == Code.UNAUTHENTICATED, (api.token, method.full_name)
    basic = local.api(None)
    error = error_of(lambda: basic.get("TableService", "GetTable", pb.GetTableRequest(table_id="t")))
    assert details_of(error).reason == "UNAUTHENTICATED"
    raw = basic.method("TableService", "GetTable")
    error = error_of(lambda: raw(pb.GetTableRequest(table_id="t"), metadata=(("authorization", "Basic b3A="),)))
    assert error.code() == Code.UNAUTHENTICATED


def test_roles_reach_exactly_their_methods(local: Served) -> None:
    """Empty requests: a permitted method answers anything but UNAUTHENTICATED/PERMISSION_DENIED."""
    for who, role in (("operator", Role.OPERATOR), ("auditor", Role.AUDITOR), ("alice", Role.PLAYER)):
        api = local.api(who)
        for service, method in ALL_METHODS:
            code = _call(api, service, method)
            allowed = role in auth.METHOD_ROLES[f"/pokdeng.v1.{service}/{method.name}"]
            if allowed:
                assert code not in (Code.UNAUTHENTICATED, Code.PERMISSION_DENIED), (who, method.name, code)
            else:
                assert code == Code.PERMISSION_DENIED, (who, method.name, code)


@pytest.fixture
def table(local: Served) -> str:
    ops = local.api("operator")
    open_wallets(ops, ["alice", "bob", "carol", "dave"])
    open_table(ops, "t", pb.PROFILE_CLASSIC, seats=6, dealer="dave")
    seat(local.api("alice"), "t", "alice", 1)
    seat(local.api("bob"), "t", "bob", 2)
    return "t"


def _denied(call: object) -> str:
    error = error_of(call)  # type: ignore[arg-type]
    details = details_of(error)
    assert details.code == Code.PERMISSION_DENIED, details
    return details.message


def test_a_player_acts_and_reads_only_for_itself(local: Served, table: str) -> None:
    alice, ops = local.api("alice"), local.api("operator")
    assert alice.wallet("alice").balance == 1_000_000
    assert "bob" in _denied(lambda: alice.wallet("bob"))
    _denied(lambda: alice.get("WalletService", "ListStatementEntries", pb.ListStatementEntriesRequest(wallet_id="bob")))
    assert alice.get("WalletService", "ListStatementEntries", pb.ListStatementEntriesRequest(wallet_id="alice")).entries
    _denied(lambda: alice.cmd("TableService", "TakeSeat", pb.TakeSeatRequest(table_id=table, player="bob", seat=3)))
    _denied(lambda: alice.cmd("TableService", "LeaveSeat", pb.LeaveSeatRequest(table_id=table, player="bob")))
    _denied(lambda: alice.cmd("TableService", "BidForBanker", pb.BidForBankerRequest(table_id=table, player="bob")))
    round_id = start_round(ops, table).round_id
    _denied(lambda: bet(alice, round_id, 2, "bob", 100))
    _denied(lambda: alice.legal(round_id))
    _denied(lambda: alice.legal(round_id, 2))
    _denied(lambda: alice.legal(round_id, 0))  # dave is the banker
    assert alice.legal(round_id, 1) == ["place_bet"]
    bet(alice, round_id, 1, "alice", 100)
    bet(local.api("bob"), round_id, 2, "bob", 100)
    _denied(lambda: local.api("carol").round(round_id))  # carol takes no part
    _denied(lambda: alice.get("RoundService", "ListRounds", pb.ListRoundsRequest(table_id=table, player="bob")))
    for name, request in [
        ("Draw", pb.DrawRequest(round_id=round_id, seat=2, player="bob")),
        ("Stay", pb.StayRequest(round_id=round_id, seat=2, player="bob")),
        ("PlaceSideBet", pb.PlaceSideBetRequest(round_id=round_id, seat=2, player="bob")),
    ]:
        _denied(lambda n=name, r=request: alice.cmd(SERVICE_OF[n], n, r))
    # an open round: a player may not audit it yet (its seed is secret)
    error = error_of(lambda: alice.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id)))
    assert error.code() == Code.FAILED_PRECONDITION


def test_a_player_sees_other_hands_only_once_shown(local: Served, table: str) -> None:
    ops, alice, bob = local.api("operator"), local.api("alice"), local.api("bob")
    for _ in range(20):
        round_id = start_round(ops, table).round_id
        bet(alice, round_id, 1, "alice", 100)
        bet(bob, round_id, 2, "bob", 100)
        dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        if dealt.round.phase == pb.ROUND_PHASE_PLAYER_TURNS and not any(
            kind_of(e) == "pok_declared" for e in dealt.events
        ):
            break
        play_round(ops, local.players(), round_id, Choices(random.Random(0)))
    else:  # pragma: no cover
        raise AssertionError("twenty deals with a pok")
    full = {h.seat: list(h.cards) for h in ops.round(round_id).hands}
    seen = alice.round(round_id)
    assert {h.seat: list(h.cards) for h in seen.hands} == {1: full[1], 2: ["", ""], 0: ["", ""]}
    dealt_event = next(e for e in seen.events if kind_of(e) == "cards_dealt")
    # no digest while the round is open: found from the outside, with the digest a player tried the 52
    # cards until one matched a hidden card's event (every later digest would do the same)
    deal = dealt_event.sequence
    assert dealt_event.redacted and not any(e.chain_digest for e in seen.events if e.sequence >= deal)
    assert all(e.chain_digest for e in seen.events if 1 < e.sequence < deal)  # before the deal nothing is hidden
    assert all(e.chain_digest for e in ops.round(round_id).events if e.sequence > 1)
    shown = payload(dealt_event)["cards"]
    assert [c for s, c in shown if s == 1] == full[1] and all(c == "" for s, c in shown if s != 1)
    operator_event = next(e for e in ops.round(round_id).events if kind_of(e) == "cards_dealt")
    assert not operator_event.redacted and all(c for _s, c in payload(operator_event)["cards"])
    assert all(c for h in local.api("auditor").round(round_id).hands for c in h.cards)
    closed = play_round(ops, local.players(), round_id, Choices(random.Random(0)))
    assert alice.round(round_id).hands == closed.hands  # everything is shown at the close
    assert [e.chain_digest for e in alice.round(round_id).events] == [
        e.chain_digest for e in ops.round(round_id).events
    ]
    assert alice.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id)).ok


def test_only_the_player_banker_plays_the_bankers_hand(local: Served, table: str) -> None:
    ops, alice, bob, dave = local.api("operator"), local.api("alice"), local.api("bob"), local.api("dave")
    players = local.players()
    for _ in range(20):
        round_id = start_round(ops, table).round_id
        bet(alice, round_id, 1, "alice", 100)
        bet(bob, round_id, 2, "bob", 100)
        ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        current = ops.round(round_id)
        while current.phase == pb.ROUND_PHASE_PLAYER_TURNS:
            holder = {s.seat: s.player for s in current.seats}[current.turn]
            players[holder].cmd(
                "RoundService", "Stay", pb.StayRequest(round_id=round_id, seat=current.turn, player=holder)
            )
            current = ops.round(round_id)
        if current.phase == pb.ROUND_PHASE_BANKER_TURN:
            break
    else:  # pragma: no cover
        raise AssertionError("twenty rounds without a banker's turn")
    assert "not the banker" in _denied(
        lambda: alice.cmd("RoundService", "BankerStay", pb.BankerStayRequest(round_id=round_id, player="alice"))
    )
    assert "as itself" in _denied(
        lambda: alice.cmd("RoundService", "BankerStay", pb.BankerStayRequest(round_id=round_id, player="dave"))
    )
    _denied(lambda: alice.cmd("RoundService", "BankerDraw", pb.BankerDrawRequest(round_id=round_id)))
    _denied(lambda: alice.cmd("RoundService", "BankerReveal", pb.BankerRevealRequest(round_id=round_id, seats=[1])))
    house = error_of(lambda: ops.cmd("RoundService", "BankerStay", pb.BankerStayRequest(round_id=round_id)))
    assert details_of(house).reason == "NOT_YOUR_TURN"  # the house is not this round's banker
    assert dave.legal(round_id, 0) == ["banker_reveal", "banker_draw", "banker_stay"]
    done = dave.cmd("RoundService", "BankerStay", pb.BankerStayRequest(round_id=round_id, player="dave"))
    assert done.round.phase == pb.ROUND_PHASE_CLOSED


def test_an_auditor_reads_and_verifies_but_changes_nothing(local: Served, table: str) -> None:
    auditor, ops = local.api("auditor"), local.api("operator")
    round_id = start_round(ops, table).round_id
    bet(local.api("alice"), round_id, 1, "alice", 100)
    closed = play_round(ops, local.players(), round_id, Choices(random.Random(2)))
    assert auditor.wallet("alice").reserved == 0
    assert auditor.round(round_id) == closed
    assert auditor.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id)).ok
    batches = auditor.get("EventService", "SubscribeEvents", pb.SubscribeEventsRequest(stop_at_head=True))
    assert sum(len(b.events) for b in batches) == local.app.max_position
    for name, request in [
        ("Deposit", pb.DepositRequest(wallet_id="alice", amount=1)),
        ("Withdraw", pb.WithdrawRequest(wallet_id="alice", amount=1)),
    ]:
        _denied(lambda n=name, r=request: auditor.cmd(SERVICE_OF[n], n, r))
    _denied(lambda: auditor.cmd("RoundService", "StartRound", pb.StartRoundRequest(table_id=table)))


def test_a_players_retry_after_the_close_gets_its_first_answer(local: Served, table: str) -> None:
    """A retry answers the events as they were shown: found by the failover and replica harnesses, a late
    retry of a player's Stay carried the digests its first answer withheld (the round had closed since)."""
    ops, alice, bob = local.api("operator"), local.api("alice"), local.api("bob")
    for attempt in range(40):
        round_id = start_round(ops, table).round_id
        bet(alice, round_id, 1, "alice", 100)
        bet(bob, round_id, 2, "bob", 100)
        ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        if ops.round(round_id).turn == 1 and "stay" in alice.legal(round_id, 1):
            break
        play_round(ops, local.players(), round_id, Choices(random.Random(attempt)))
    else:  # pragma: no cover
        raise AssertionError("forty deals without a choice for alice")
    stub = alice.method("RoundService", "Stay")
    request = pb.StayRequest(request_id=f"retry-{round_id}", round_id=round_id, seat=1, player="alice")
    first = stub(request, metadata=alice.metadata)
    assert first.events and not any(e.chain_digest for e in first.events)  # bob's cards are hidden
    play_round(ops, local.players(), round_id, Choices(random.Random(0)))
    again = stub(request, metadata=alice.metadata)
    assert list(again.events) == list(first.events)
    assert all(h.cards and all(h.cards) for h in again.round.hands)  # the round as it is now: all shown
