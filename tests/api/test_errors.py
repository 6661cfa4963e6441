"""The error map, class by class, through a real server: code, message and google.rpc details.

Every refusal leaves the store untouched (no event written).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.errors import details_of
from pokdeng_service.application.errors import Conflict, NotFound
from pokdeng_testkit.keys import OTHER_VAULT_KEY

from .client import Api, error_of, kind_of, open_table, open_wallets, seat, start_round
from .conftest import Served, StartServer, make_app, sqlite_env

Code = grpc.StatusCode


def refused(served: Served, call: Callable[[], Any]) -> Any:
    """The details of a call's error, after checking that it wrote nothing."""
    before = served.app.max_position
    error = error_of(call)
    assert served.app.max_position == before, "a refused call wrote events"
    return details_of(error)


@pytest.fixture
def ops(local: Served) -> Api:
    return local.api("operator")


def test_bad_input_lists_every_field_violation(local: Served, ops: Api) -> None:
    request = pb.DepositRequest(request_id="", wallet_id="x" * 129, amount=0)
    details = refused(local, lambda: ops.get("WalletService", "Deposit", request))
    assert details.code == Code.INVALID_ARGUMENT and details.reason == "INVALID_ARGUMENT"
    assert [v.field for v in details.field_violations] == ["request_id", "wallet_id", "amount"]
    assert "Traceback" not in details.message


def test_enum_values_and_options_are_checked(local: Served, ops: Api) -> None:
    for profile in (pb.PROFILE_UNSPECIFIED, cast(pb.Profile.ValueType, 99)):
        request = pb.OpenTableRequest(request_id="t", table_id="t", profile=profile, min_stake=1, max_stake=2, seats=2)
        details = refused(local, lambda r=request: ops.get("TableService", "OpenTable", r))  # type: ignore[misc]
        assert details.code == Code.INVALID_ARGUMENT
        assert [v.field for v in details.field_violations] == ["profile"]
    request = pb.OpenTableRequest(
        request_id="t",
        table_id="t",
        profile=pb.PROFILE_ROOM,
        options=pb.TableOptions(straights=True),
        min_stake=5,
        max_stake=1,
        seats=40,
        turn_timeout=cast(Any, timedelta(seconds=99999)),
    )
    details = refused(local, lambda: ops.get("TableService", "OpenTable", request))
    assert [v.field for v in details.field_violations] == ["options", "max_stake", "seats", "turn_timeout"]
    request = pb.OpenTableRequest(
        request_id="t",
        table_id="t",
        profile=pb.PROFILE_CLASSIC,
        options=pb.TableOptions(ace_low=True),
        min_stake=1,
        max_stake=2,
        seats=2,
    )
    details = refused(local, lambda: ops.get("TableService", "OpenTable", request))
    assert [v.field for v in details.field_violations] == ["options.ace_low"]


def test_an_invalid_command_from_the_rules_names_its_field(local: Served, ops: Api) -> None:
    open_wallets(ops, ["alice"])
    open_table(ops, "t", pb.PROFILE_KINGMAKER, min_stake=100, max_stake=1000, seats=5)
    seat(local.api("alice"), "t", "alice", 1)
    round_id = start_round(ops, "t").round_id
    request = pb.PlaceBetRequest(request_id="b1", round_id=round_id, seat=1, player="alice", stake=5000)
    details = refused(local, lambda: ops.get("RoundService", "PlaceBet", request))
    assert details.code == Code.INVALID_ARGUMENT
    assert [v.field for v in details.field_violations] == ["stake"]
    assert "100..1000" in details.message


def test_a_reused_request_id_is_a_duplicate_request(local: Served, ops: Api) -> None:
    open_wallets(ops, ["alice"])
    ops.cmd("WalletService", "Deposit", pb.DepositRequest(request_id="dep-1", wallet_id="alice", amount=10))
    request = pb.DepositRequest(request_id="dep-1", wallet_id="alice", amount=11)
    details = refused(local, lambda: ops.get("WalletService", "Deposit", request))
    assert details.code == Code.INVALID_ARGUMENT and details.reason == "DUPLICATE_REQUEST"
    assert [v.field for v in details.field_violations] == ["request_id"]


def test_wrong_phase(local: Served, ops: Api) -> None:
    open_wallets(ops, ["alice"])
    open_table(ops, "t", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
    round_id = start_round(ops, "t").round_id
    details = refused(
        local, lambda: ops.get("RoundService", "Deal", pb.DealRequest(request_id="d0", round_id=round_id))
    )
    assert details.code == Code.FAILED_PRECONDITION and details.reason == "RULE_VIOLATION"  # nothing to deal
    local.api("alice").cmd(
        "RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=200)
    )
    ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))  # ante: the deal settles and closes the round
    late = pb.PlaceBetRequest(request_id="late", round_id=round_id, seat=1, player="alice", stake=200)
    details = refused(local, lambda: ops.get("RoundService", "PlaceBet", late))
    assert details.code == Code.FAILED_PRECONDITION and details.reason == "WRONG_PHASE"
    assert details.metadata == {"phase": "closed"} and details.precondition_types == ("WRONG_PHASE",)
    assert "betting" in details.message


def test_not_your_turn_and_unknown_seat(local: Served, ops: Api) -> None:
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "t", pb.PROFILE_KINGMAKER, min_stake=100, max_stake=1000, seats=5)
    seat(local.api("alice"), "t", "alice", 1)
    seat(local.api("bob"), "t", "bob", 2)
    request = pb.TakeSeatRequest(request_id="s9", table_id="t", player="alice", seat=9)
    details = refused(local, lambda: ops.get("TableService", "TakeSeat", request))
    assert details.code == Code.FAILED_PRECONDITION and details.reason == "UNKNOWN_SEAT"
    assert details.metadata == {"seat": "9"}
    round_id = start_round(ops, "t").round_id
    alice = local.api("alice")
    on_bobs_seat = pb.PlaceBetRequest(request_id="x", round_id=round_id, seat=2, player="alice", stake=100)
    details = refused(local, lambda: alice.get("RoundService", "PlaceBet", on_bobs_seat))
    assert details.code == Code.FAILED_PRECONDITION and details.reason == "NOT_YOUR_TURN"


def test_insufficient_funds_carries_the_amounts(local: Served, ops: Api) -> None:
    open_wallets(ops, {"alice": 1000})
    request = pb.WithdrawRequest(request_id="w", wallet_id="alice", amount=1500)
    details = refused(local, lambda: ops.get("WalletService", "Withdraw", request))
    assert details.code == Code.FAILED_PRECONDITION and details.reason == "INSUFFICIENT_FUNDS"
    assert details.metadata == {"required": "1500", "available": "1000", "wallet": "alice"}
    assert details.precondition_types == ("INSUFFICIENT_FUNDS",)
    open_table(ops, "t", pb.PROFILE_KINGMAKER, min_stake=100, max_stake=1000, seats=5)
    seat(local.api("alice"), "t", "alice", 1)
    round_id = start_round(ops, "t").round_id
    bet = pb.PlaceBetRequest(request_id="b", round_id=round_id, seat=1, player="alice", stake=300)  # reserves 5x
    details = refused(local, lambda: local.api("alice").get("RoundService", "PlaceBet", bet))
    assert details.code == Code.FAILED_PRECONDITION
    assert details.metadata == {"required": "1500", "available": "1000", "wallet": "alice"}


def test_unknown_ids_are_not_found(local: Served, ops: Api) -> None:
    details = refused(local, lambda: ops.wallet("nobody"))
    assert details.code == Code.NOT_FOUND and details.reason == "NOT_FOUND" and details.resource == ("wallet", "nobody")
    details = refused(local, lambda: ops.round("nowhere#1"))
    assert details.code == Code.NOT_FOUND and details.resource == ("round", "nowhere#1")
    deposit = pb.DepositRequest(request_id="d", wallet_id="nobody", amount=5)
    assert refused(local, lambda: ops.get("WalletService", "Deposit", deposit)).code == Code.NOT_FOUND
    deal = pb.DealRequest(request_id="d2", round_id="nowhere#1")
    assert refused(local, lambda: ops.get("RoundService", "Deal", deal)).code == Code.NOT_FOUND


def test_a_taken_id_already_exists(local: Served, ops: Api) -> None:
    open_wallets(ops, ["alice"])
    again = pb.OpenWalletRequest(request_id="again", wallet_id="alice")
    details = refused(local, lambda: ops.get("WalletService", "OpenWallet", again))
    assert details.code == Code.ALREADY_EXISTS and details.reason == "ALREADY_EXISTS"


class Faulty:
    """The real application, except for the methods a test replaces."""

    def __init__(self, app: Any, **overrides: Callable[..., Any]) -> None:
        self._app = app
        self._overrides = overrides

    def __getattr__(self, name: str) -> Any:
        return self._overrides.get(name) or getattr(self._app, name)

    # The server reaches the application through its one command entry point and its partition lookup.
    def handle(self, principal: Any, request_id: str, command: Any) -> Any:
        override = self._overrides.get(command.name)
        if override is not None:
            return override(request_id, *command.fields().values())
        return self._app.handle(principal, request_id, command)

    def app_for(self, identifier: str, kind: str = "table") -> Any:
        return self

    @property
    def apps(self) -> list[Any]:
        return [self]


@pytest.fixture
def faulty(tmp_path: Path, start_server: StartServer) -> Iterator[Callable[..., Served]]:
    apps: list[Any] = []

    def make(**overrides: Callable[..., Any]) -> Served:
        folder = tmp_path / f"store{len(apps)}"
        folder.mkdir()
        app = make_app(sqlite_env(folder))
        apps.append(app)
        return start_server(Faulty(app, **overrides), max_workers=2)

    yield make
    for app in apps:
        app.close()


def test_a_conflict_is_aborted_and_retryable(faulty: Callable[..., Served]) -> None:
    def conflict(*_args: Any, **_kwargs: Any) -> Any:
        raise Conflict("request 'r' kept conflicting with concurrent writers; try again")

    served = faulty(deposit=conflict)
    ops = served.api("operator")
    details = details_of(
        error_of(lambda: ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="a", amount=1)))
    )
    assert details.code == Code.ABORTED and details.reason == "CONFLICT"


def test_an_unexpected_error_is_internal_with_a_reference_and_no_trace(
    faulty: Callable[..., Served], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("secret database password in a stack frame")

    served = faulty(get_wallet=broken)
    with caplog.at_level(logging.ERROR, logger="pokdeng.api"):
        details = details_of(error_of(lambda: served.api("operator").wallet("alice")))
    assert details.code == Code.INTERNAL and details.reason == "INTERNAL"
    reference = details.metadata["reference"] if details.metadata else ""
    assert details.message == f"internal error (reference {reference})"
    assert "secret" not in details.message and "Traceback" not in details.message
    (record,) = [r for r in caplog.records if reference in r.getMessage()]
    assert record.exc_info is not None and "secret database password" in str(record.exc_info[1])


def test_a_call_whose_deadline_passed_is_not_started(faulty: Callable[..., Served]) -> None:
    """Two slow calls (of two callers: one worker a caller) hold both workers; a third call's deadline passes
    while it waits: the app never runs it, not even once a worker is free."""
    release = threading.Event()
    calls: list[str] = []

    def slow_wallet(wallet_id: str) -> Any:
        calls.append(wallet_id)
        if wallet_id.startswith("slow"):
            release.wait(60)
            raise Conflict("busy")
        raise NotFound(f"no wallet {wallet_id}")

    served = faulty(get_wallet=slow_wallet)
    ops, auditor = served.api("operator"), served.api("auditor")
    busy = [
        api.method("WalletService", "GetWallet").future(
            pb.GetWalletRequest(wallet_id=f"slow{i}"), metadata=api.metadata
        )
        for i, api in enumerate((ops, auditor))
    ]
    deadline = time.monotonic() + 30  # (a hang guard)
    while len(calls) < 2:
        assert time.monotonic() < deadline, calls
        time.sleep(0.01)
    stub = ops.method("WalletService", "GetWallet")
    late = details_of(error_of(lambda: stub(pb.GetWalletRequest(wallet_id="late"), metadata=ops.metadata, timeout=0.2)))
    assert late.code == Code.DEADLINE_EXCEEDED
    release.set()
    for future in busy:
        assert future.exception(timeout=30) is not None
    # the operator's next call waits behind anything of the operator's still in line: had the late call been
    # kept, it would have run first
    after = details_of(error_of(lambda: stub(pb.GetWalletRequest(wallet_id="after"), metadata=ops.metadata)))
    assert after.code == Code.NOT_FOUND
    assert "late" not in calls and calls[-1] == "after", calls


def test_a_timeout_for_a_turn_already_played_is_refused(local: Served, ops: Api) -> None:
    """TimeOutTurn with ``expected_version`` (what a turn clock sends) acts only on the turn
    it was armed for: once that turn is played the round has moved on, and a late timeout is
    refused instead of landing on the next player's turn."""
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "clock", pb.PROFILE_CLASSIC, seats=2)
    seat(local.api("alice"), "clock", "alice", 1)
    seat(local.api("bob"), "clock", "bob", 2)
    for attempt in range(40):  # a deal where alice must choose (no pok, no automatic draw)
        round_id = start_round(ops, "clock", f"clock-{attempt}").round_id
        local.api("alice").cmd(
            "RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=100)
        )
        local.api("bob").cmd(
            "RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=2, player="bob", stake=100)
        )
        dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id)).round
        if dealt.phase == pb.ROUND_PHASE_PLAYER_TURNS and dealt.turn == 1:
            break
        if dealt.phase != pb.ROUND_PHASE_CLOSED:
            ops.cmd("RoundService", "VoidRound", pb.VoidRoundRequest(round_id=round_id, reason="not this deal"))
    else:
        pytest.fail("forty deals without alice to choose")
    armed = dealt.version
    local.api("alice").cmd("RoundService", "Stay", pb.StayRequest(round_id=round_id, seat=1, player="alice"))
    late = pb.TimeOutTurnRequest(request_id="late", round_id=round_id, expected_version=armed)
    details = refused(local, lambda: ops.get("RoundService", "TimeOutTurn", late))
    assert details.code == Code.FAILED_PRECONDITION and details.reason == "WRONG_PHASE"
    assert "moved on" in details.message
    now = ops.round(round_id)
    bad = pb.TimeOutTurnRequest(request_id="bad", round_id=round_id, expected_version=0)
    details = refused(local, lambda: ops.get("RoundService", "TimeOutTurn", bad))
    assert details.code == Code.INVALID_ARGUMENT and [v.field for v in details.field_violations] == ["expected_version"]
    if now.phase == pb.ROUND_PHASE_PLAYER_TURNS:  # bob's turn: a timeout armed for it applies
        timed = ops.cmd(
            "RoundService", "TimeOutTurn", pb.TimeOutTurnRequest(round_id=round_id, expected_version=now.version)
        )
        assert any(kind_of(e) == "turn_timed_out" for e in timed.events)


def test_a_round_whose_seed_cannot_be_unsealed_is_refused_as_sealed(tmp_path: Path, start_server: StartServer) -> None:
    """Found from the outside: with the vault key lost (a new one made), Deal and PlaceBet on a round opened
    under the old key answered INTERNAL; docs/operations.md promises a refusal that says why, and VoidRound."""
    from pokdeng_service.application import PokdengApp
    from pokdeng_service.store.vault import SeedVault

    env = sqlite_env(tmp_path)
    first = make_app(env)
    served = start_server(first)
    ops, alice = served.api("operator"), served.api("alice")
    open_wallets(ops, ["alice"])
    open_table(ops, "t1", pb.PROFILE_CLASSIC)
    seat(alice, "t1", "alice", 1)
    round_id = start_round(ops, "t1").round_id
    alice.cmd("RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=100))
    served.stop()
    first.close()
    other = PokdengApp(env, vault=SeedVault.from_hex(OTHER_VAULT_KEY))  # another key: the seal does not open
    served = start_server(other)
    try:
        ops, alice = served.api("operator"), served.api("alice")
        for call in (
            lambda: ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id, request_id="deal-later")),
            lambda: alice.cmd(
                "RoundService",
                "PlaceBet",
                pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=200, request_id="bet-later"),
            ),
        ):
            details = refused(served, call)
            assert details.code is Code.FAILED_PRECONDITION, details
            assert details.reason == "SEALED_SHOE" and "cannot unseal the server seed" in details.message
        void = pb.VoidRoundRequest(round_id=round_id, reason="vault key lost", request_id="void-later")
        ops.cmd("RoundService", "VoidRound", void)
        assert ops.round(round_id).phase == pb.ROUND_PHASE_CLOSED
    finally:
        served.stop()
        other.close()
