"""Hostile input through the gRPC API: every RPC with malformed fields, and fuzzed request messages.

A real server on loopback over an SQLite store holds a small world: funded wallets, a
classic table with a closed round and a round in betting, a room with a player banker and
a kingmaker table. Then:

* the case table: each command RPC with each of its fields malformed in turn (zero,
  negative, int64 min/max amounts; seats and counts out of range, int32 extremes; unknown
  enum values; empty, blank, control-character and 10 kB ids and request ids; a 1 MB client
  seed; 10 kB reasons and periods; missing request ids; empty, duplicated and out-of-range
  seats in BankerReveal; unknown ids). Each is refused with the documented code
  (INVALID_ARGUMENT for malformed input; NOT_FOUND or FAILED_PRECONDITION for well-formed
  ids that do not fit), writes nothing and changes no view; the same request with no token is
  UNAUTHENTICATED and, from the auditor, PERMISSION_DENIED, again writing nothing;
* the read RPCs with malformed fields likewise (nothing they do writes);
* hypothesis over the request messages: for each RPC, messages generated from the
  descriptor's fields (ints across the whole range of their type, unicode text with control
  characters, long strings, known ids, repeated fields, optional fields set or not, unknown
  enum values). The answer is OK or one of the documented refusals, never UNKNOWN or
  INTERNAL, and a refused call writes nothing;
* raw bytes on the wire (varints beyond 64 bits, invalid UTF-8, truncated messages), an
  int64 overflow reached by playing, hundreds of seats to reveal, the last int64 log
  position, a wallet topped up to int64 max after staking: these found bugs, now fixed and
  kept as tests.

No card text is read from clients by any RPC (cards only appear in answers), so there is no
card field to malform here; the rules engine's card parser is tested in tests/core.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.errors import DomainError
from pokdeng_service.api.errors import details_of
from pokdeng_service.api.server import create_server
from pokdeng_service.application import MAX_AMOUNT, PokdengApp
from pokdeng_service.readmodels import ReadModels
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import VAULT_KEY
from tests.api.client import TOKENS, Api, Choices, play_round
from tests.api.conftest import sqlite_env, token_store
from tests.service import play

from .model import view_or_none

Code = grpc.StatusCode
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
BIG = "x" * 10_000
SERVICES = pb.DESCRIPTOR.services_by_name
METHODS: dict[str, tuple[str, MethodDescriptor]] = {
    m.name: (s.name, m) for s in SERVICES.values() for m in s.methods if s.name != "EventService"
}
STREAMS = frozenset(name for name, (_s, m) in METHODS.items() if m.server_streaming)  # WatchTable, WatchRound
COMMANDS = tuple(sorted(name for name, (_s, m) in METHODS.items() if "request_id" in m.input_type.fields_by_name))
READS = tuple(sorted(name for name in METHODS if name not in COMMANDS))
REFUSED = frozenset({Code.INVALID_ARGUMENT, Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.ALREADY_EXISTS})
INVALID = frozenset({Code.INVALID_ARGUMENT})
UNFIT = frozenset({Code.NOT_FOUND, Code.FAILED_PRECONDITION})


def request_class(method: str) -> Any:
    """The request message class of ``method`` (Any: its constructor takes the message's own fields)."""
    return message_factory.GetMessageClass(METHODS[method][1].input_type)


# --- the world -----------------------------------------------------------------------------------


@dataclass
class Hostile:
    """A running server over an application with a small world in it, and callers."""

    app: PokdengApp
    channel: grpc.Channel
    apis: dict[str, Api]
    wallets: tuple[str, ...]
    tables: tuple[str, ...]
    rounds: tuple[str, ...]
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def snapshot(self) -> tuple[Any, ...]:
        app = self.app
        return (
            app.max_position,
            tuple(view_or_none(app.get_wallet, w) for w in self.wallets),
            tuple(view_or_none(app.get_table, t) for t in self.tables),
            tuple(view_or_none(app.get_round, r) for r in self.rounds),
        )

    def send(self, who: str | None, method: str, request: Message) -> tuple[Code, str, tuple[str, ...]]:
        """Call ``method`` (a unary RPC; SubscribeEvents read to the head; a watch stream to its first
        message); (status code, message, the fields its BadRequest violations name)."""
        api = self.apis[who or "anon"]
        service = METHODS[method][0] if method in METHODS else "EventService"
        try:
            answer = api.method(service, method)(request, metadata=api.metadata, timeout=30)
            if method == "SubscribeEvents":
                list(answer)
            elif method in STREAMS:  # (a watch stays open: its first message, or its refusal, answers)
                next(answer, None)
                answer.cancel()
        except grpc.RpcError as error:
            try:
                details = details_of(error)
            except ValueError:  # the status details disagree with the code (the transport's own error)
                return error.code(), str(error.details()), ()
            return error.code(), details.message, tuple(v.field for v in details.field_violations)
        return Code.OK, "", ()

    def refused(
        self, who: str | None, method: str, request: Message, codes: frozenset[Code], on: str | None = None
    ) -> None:
        """Refused with one of ``codes`` (``on``: an INVALID_ARGUMENT names that field), changing nothing."""
        before = self.snapshot()
        code, message, fields = self.send(who, method, request)
        after = self.snapshot()
        assert after[0] == before[0], f"refused {method} wrote events ({code}: {message})"
        assert after == before, f"refused {method} changed a view ({code}: {message})"
        assert code in codes, f"{method} by {who}: {code.name} {message!r}, expected {sorted(c.name for c in codes)}"
        if on is not None and code == Code.INVALID_ARGUMENT:
            assert on in fields, f"{method} by {who}: INVALID_ARGUMENT on {fields}, expected on {on!r} ({message!r})"


def build_world(app: PokdengApp) -> Hostile:
    """Wallets, tables and rounds, made through the application (not under test here)."""
    d = play.Driver(app, prefix="setup", chooser=play.Chooser(random.Random(7)))
    play.open_wallets(d, ["alice", "bob", "carol", "dave"], 100_000)
    d.call("open_wallet", "broke")
    play.open_table(d, "c1", "classic", [(1, "alice"), (2, "bob")])
    closed = play.start_round(d, "c1")
    play.seat_bets(d, closed, 100)
    play.drive_round(d, closed)
    betting = play.start_round(d, "c1", "hostile")
    play.place_bets(d, betting, [(1, "alice", 100)])
    play.open_table(d, "r1", "room", [(1, "alice"), (2, "bob"), (3, "carol")])
    play.hold_banker_bid(d, "r1", [("alice", 10)])
    room_round = play.start_round(d, "r1")
    play.open_table(d, "k1", "kingmaker", [(1, "bob")])
    play.open_table(d, "c2", "classic", [(1, "carol"), (2, "dave")])
    for _ in range(2):  # (two closed rounds at c2: ListRounds has a second page of size 1)
        paged = play.start_round(d, "c2")
        play.seat_bets(d, paged, 100)
        play.drive_round(d, paged)
    return Hostile(
        app=app,
        channel=None,  # type: ignore[arg-type]  # set by the fixture
        apis={},
        wallets=("alice", "bob", "carol", "dave", "broke", "fresh-wallet", "nope"),
        tables=("c1", "r1", "k1", "c2", "fresh-table", "nope"),
        rounds=(closed, betting, room_round, "k1#1", "c1#3", "nope#1"),
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    env = sqlite_env(tmp_path_factory.mktemp("hostile"))
    app = PokdengApp(env, vault=SeedVault.from_hex(VAULT_KEY))
    world = build_world(app)
    models = ReadModels(env)  # (as `pokdeng serve` keeps them: the List methods read them)
    models.catch_up(app)
    models.run_in_background(app)
    server, port = create_server("127.0.0.1:0", app, tokens=token_store(), max_workers=4, read_models=models)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=10)
    world.channel = channel
    world.apis = {who: Api(channel, TOKENS[who], prefix=who) for who in ("operator", "auditor", "alice")}
    world.apis["anon"] = Api(channel, None, prefix="anon")
    try:
        yield world
    finally:
        channel.close()
        server.stop(None).wait(10)
        models.close()
        app.close()


# --- the case table ------------------------------------------------------------------------------

BASE: dict[str, dict[str, Any]] = {
    "OpenWallet": {"wallet_id": "fresh-wallet", "currency_code": "USD"},
    "Deposit": {"wallet_id": "alice", "amount": 100},
    "Withdraw": {"wallet_id": "alice", "amount": 100},
    "OpenWalletSession": {
        "player": "alice",
        "token": "a-session-token",
        "currency_code": "THB",
        "game_code": "pokdeng",
    },
    "OpenTable": {
        "table_id": "fresh-table",
        "profile": pb.PROFILE_CLASSIC,
        "min_stake": 100,
        "max_stake": 1000,
        "seats": 5,
        "turn_timeout": Duration(seconds=30),
        "currency_code": "THB",
    },
    "TakeSeat": {"table_id": "c1", "player": "carol", "seat": 3},
    "LeaveSeat": {"table_id": "c1", "player": "bob", "seat": 2},
    "BidForBanker": {"table_id": "r1", "player": "bob", "rounds": 10},
    "CloseBankerBid": {"table_id": "r1"},
    "DisconnectBanker": {"table_id": "r1", "player": "alice"},
    "ReconnectBanker": {"table_id": "r1", "player": "alice"},
    "CheckpointTable": {"table_id": "c1", "period": ""},
    "StartRound": {"table_id": "k1", "client_seed": "x"},
    "PlaceBet": {"round_id": "c1#2", "seat": 2, "player": "bob", "stake": 100, "client_seed": "x"},
    "ContributeSeed": {"round_id": "c1#2", "player": "alice", "client_seed": "x"},
    "Deal": {"round_id": "c1#2"},
    "PlaceSideBet": {"round_id": "c1#2", "seat": 1, "player": "alice"},
    "CloseSideBets": {"round_id": "c1#2"},
    "Draw": {"round_id": "c1#2", "seat": 1, "player": "alice"},
    "Stay": {"round_id": "c1#2", "seat": 1, "player": "alice"},
    "BankerReveal": {"round_id": "c1#2", "seats": [1], "player": ""},
    "BankerDraw": {"round_id": "c1#2", "player": ""},
    "BankerStay": {"round_id": "c1#2", "player": ""},
    "TimeOutTurn": {"round_id": "c1#2", "expected_version": 1},
    "VoidRound": {"round_id": "c1#2", "reason": "hostile"},
    "SignTreeHead": {"shard": ""},  # (this app has no signing key: a well-formed one is FAILED_PRECONDITION)
}
OPTIONAL_TEXT = {("BankerReveal", "player"), ("BankerDraw", "player"), ("BankerStay", "player")}
OPTIONAL_TEXT |= {("CheckpointTable", "period"), ("StartRound", "client_seed"), ("SignTreeHead", "shard")}
OPTIONAL_TEXT |= {("ContributeSeed", "player")}  # (empty: the platform)
OPTIONAL_TEXT |= {("OpenWalletSession", "game_code")}  # (empty: the server's --wallet-game-code)
NAMED = {"turn_timeout", "currency_code"}  # refused with a BadRequest violation on the field itself
NEW_IDS = {("OpenWallet", "wallet_id"), ("OpenTable", "table_id"), ("TakeSeat", "player")}
NEW_IDS |= {("OpenWalletSession", "player")}  # (any player's session may be handed over)
BAD_IDS = ("", "   ", BIG, "a\x00b", "line\nbreak", "\x7f", "x" * 129)
BAD_TEXT = {"client_seed": "s" * 10_000, "reason": BIG, "period": BIG}
TOO_LARGE = frozenset({Code.RESOURCE_EXHAUSTED})  # a request over 64 KiB: refused by the transport, unread


def _bad_values(method: str, name: str, value: Any) -> list[tuple[str, Any, frozenset[Code]]]:
    """(label, value, expected codes) for one field of one command."""
    out: list[tuple[str, Any, frozenset[Code]]] = []
    if name == "request_id":
        return [(repr(v[:12]), v, INVALID) for v in BAD_IDS]
    if name == "currency_code":  # (empty: THB) an ISO 4217 code with minor units, nothing else
        bad_codes = ("thb", "ZZZ", "XAU", "XXX", "TH", "THBB", " THB", "T\x00B", "ТНВ", BIG)
        return [(repr(v[:12]), v, INVALID) for v in bad_codes]
    if name == "turn_timeout":  # a Duration of whole seconds, 1 s to 1 h (unset or 0: 30 s)
        return [
            ("-1s", Duration(seconds=-1), INVALID),
            ("1.5s", Duration(seconds=1, nanos=500_000_000), INVALID),
            ("0.5s", Duration(nanos=500_000_000), INVALID),
            ("-0.5s", Duration(nanos=-500_000_000), INVALID),
            ("30s and 1ns", Duration(seconds=30, nanos=1), INVALID),
            ("3601s", Duration(seconds=3601), INVALID),
            ("int32 max s", Duration(seconds=INT32_MAX), INVALID),
            ("int32 min s", Duration(seconds=INT32_MIN), INVALID),
            ("int64 max s", Duration(seconds=INT64_MAX), INVALID),
            ("int64 min s", Duration(seconds=INT64_MIN), INVALID),
        ]
    if name == "token":  # (a wallet session's: 1 to 255 characters, none a control or invisible one)
        bad_tokens = ("", "   ", "t" * 256, BIG, "a\x00b", "line\nbreak", "\x7f", "rtl\u202eoverride")
        return [(repr(v[:12]), v, INVALID) for v in bad_tokens]
    if name in BAD_TEXT:
        out.append(("huge", BAD_TEXT[name], INVALID))
        if name == "reason":
            out += [("empty", "", INVALID), ("blank", "   ", INVALID), ("501", "r" * 501, INVALID)]
        if name == "client_seed":
            out.append(("257", "s" * 257, INVALID))
            out.append(("a megabyte", "s" * 1_000_000, TOO_LARGE))
        if name == "period":
            out.append(("129", "p" * 129, INVALID))
        return out
    if isinstance(value, str):
        optional = (method, name) in OPTIONAL_TEXT
        for bad in BAD_IDS:
            if optional and bad == "":
                continue
            # an optional player left blank counts as absent for the checks, then meets the rules
            codes = INVALID | UNFIT if optional and not bad.strip() else INVALID
            out.append((repr(bad[:12]), bad, codes))
        if (method, name) not in NEW_IDS and not optional:
            out.append(("unknown", "nope", UNFIT))
        return out
    if name in ("amount", "stake", "min_stake"):
        out += [("0", 0, INVALID), ("-1", -1, INVALID), ("int64 min", INT64_MIN, INVALID)]
        # Amounts are capped at 2**53 - 1 (exact in JSON): anything above is malformed, int64 max too.
        out += [("int64 max", INT64_MAX, INVALID), ("2**53", 2**53, INVALID)]
        return out
    if name == "expected_version":  # (1 is long past for the round: a stale timeout is refused)
        return [("0", 0, INVALID), ("-1", -1, INVALID), ("int64 min", INT64_MIN, INVALID), ("stale", 1, UNFIT)]
    if name == "max_stake":
        return [("0", 0, INVALID), ("-1", -1, INVALID), ("int64 min", INT64_MIN, INVALID), ("below min", 99, INVALID)]
    if name == "profile":
        return [("0", 0, INVALID), ("99", 99, INVALID), ("-1", -1, INVALID), ("int32 max", INT32_MAX, INVALID)]
    if name == "seats" and method == "BankerReveal":
        return [
            ("empty", [], INVALID),
            ("duplicated", [1, 1], INVALID),
            ("duplicated late", [1, 2, 2], INVALID),
            ("zero", [0], INVALID),
            ("negative", [-1], INVALID),
            ("int32 max", [INT32_MAX], INVALID),
            ("twenty", list(range(1, 21)), INVALID),  # (hundreds: test_many_seats_to_reveal_are_invalid_argument)
        ]
    if name in ("seat", "seats", "rounds"):
        out += [("-1", -1, INVALID), ("int32 max", INT32_MAX, INVALID), ("int32 min", INT32_MIN, INVALID)]
        if name in ("seat", "seats"):
            out.append(("18", 18, INVALID))
        if name == "seat" or (name == "seats" and method == "OpenTable"):
            out.append(("0", 0, INVALID))
        if name == "rounds":  # (a tenure the room does not offer is a rule: checked after the table's phase)
            out += [("1001", 1001, INVALID), ("not a tenure", 3, INVALID | UNFIT)]
        return out
    raise AssertionError(f"no bad values for {method}.{name}")


def cases() -> list[Any]:
    out = []
    for method in COMMANDS:
        base = BASE[method]
        missing = {**base, "request_id": ""}
        out.append(pytest.param(method, missing, INVALID, None, id=f"{method}-missing request_id"))
        for name in ("request_id", *base):
            for label, value, codes in _bad_values(method, name, base.get(name, "r")):
                fields = {**base, name: value}
                if name != "request_id":
                    fields["request_id"] = f"hostile-{method}-{name}-{label}"
                on = name if name in NAMED else None
                out.append(pytest.param(method, fields, codes, on, id=f"{method}-{name}={label}"))
    extra: list[tuple[Any, ...]] = [
        ("OpenTable", {**BASE["OpenTable"], "options": pb.TableOptions(ace_low=True)}, "ace_low without straights"),
        ("OpenTable", {**BASE["OpenTable"], "profile": pb.PROFILE_ROOM, "options": pb.TableOptions(straights=True)}),
        ("OpenTable", {**BASE["OpenTable"], "min_stake": 101, "max_stake": 101, "profile": pb.PROFILE_ANTE}),
        ("OpenTable", {**BASE["OpenTable"], "dealer": ""}, "empty dealer"),
        ("OpenTable", {**BASE["OpenTable"], "dealer": BIG}, "huge dealer"),
        ("OpenTable", {**BASE["OpenTable"], "profile": pb.PROFILE_KINGMAKER, "dealer": "dave"}, "dealer off classic"),
        ("OpenTable", {**BASE["OpenTable"], "seats": 17, "profile": pb.PROFILE_ROOM}, "17 seats in a room"),
        ("LeaveSeat", {**BASE["LeaveSeat"], "seat": 0}, "seat 0"),
    ]
    for method, fields, *named in extra:
        name = named[0] if named else str(sorted(fields.items()))[:40]
        fields = {**fields, "request_id": f"hostile-extra-{name}"}
        out.append(pytest.param(method, fields, INVALID, None, id=f"{method}-{name}"))
    return out


@pytest.mark.parametrize(("method", "fields", "codes", "on"), cases())
def test_malformed_commands_are_refused_and_change_nothing(
    hostile: Hostile, method: str, fields: dict[str, Any], codes: frozenset[Code], on: str | None
) -> None:
    request = request_class(method)(**fields)
    hostile.refused("operator", method, request, codes, on)
    unread = codes == TOO_LARGE  # (too large to be read: the same refusal whoever sends it)
    hostile.refused(None, method, request, TOO_LARGE if unread else frozenset({Code.UNAUTHENTICATED}))
    hostile.refused("auditor", method, request, TOO_LARGE if unread else frozenset({Code.PERMISSION_DENIED}))


def test_the_case_table_covers_every_command_and_field() -> None:
    covered = set()
    for case in cases():
        method, rest = str(case.id).split("-", 1)
        covered.add((method, rest.split("=", 1)[0]))
    for method in COMMANDS:
        for name in METHODS[method][1].input_type.fields_by_name:
            if name != "options" and name != "dealer":
                assert (method, name) in covered, (method, name)


READ_CASES: list[tuple[Any, ...]] = [  # (method, fields, codes[, the field INVALID_ARGUMENT names])
    ("GetWallet", {"wallet_id": ""}, INVALID),
    ("GetWallet", {"wallet_id": BIG}, INVALID),
    ("GetWallet", {"wallet_id": "a\x00b"}, INVALID),
    ("GetWallet", {"wallet_id": "nope"}, frozenset({Code.NOT_FOUND})),
    # (a tampered page_token: test_tampered_page_tokens_are_invalid_argument; above the maximum:
    # test_page_sizes_above_the_maximum_are_the_maximum)
    ("ListStatementEntries", {"wallet_id": "alice", "page_size": -1}, INVALID, "page_size"),
    ("ListStatementEntries", {"wallet_id": "alice", "page_size": INT32_MIN}, INVALID, "page_size"),
    ("ListStatementEntries", {"wallet_id": "alice", "page_token": "not a token"}, INVALID, "page_token"),
    ("ListStatementEntries", {"wallet_id": BIG}, INVALID),
    ("ListWallets", {"page_size": -1}, INVALID, "page_size"),
    ("ListWallets", {"page_token": "x" * 2000}, INVALID, "page_token"),
    ("ListTables", {"page_size": INT32_MIN}, INVALID, "page_size"),
    ("ListTables", {"page_token": "e30"}, INVALID, "page_token"),  # ("{}")
    ("GetTable", {"table_id": ""}, INVALID),
    ("GetTable", {"table_id": BIG}, INVALID),
    ("GetTable", {"table_id": "nope"}, frozenset({Code.NOT_FOUND})),
    ("GetRound", {"round_id": "\n"}, INVALID),
    ("GetRound", {"round_id": BIG}, INVALID),
    ("GetRound", {"round_id": "nope#1"}, frozenset({Code.NOT_FOUND})),
    ("GetLegalCommands", {"round_id": "c1#2", "seat": -1}, INVALID),
    ("GetLegalCommands", {"round_id": "c1#2", "seat": INT32_MAX}, INVALID),
    ("GetLegalCommands", {"round_id": "c1#2", "seat": INT32_MIN}, INVALID),
    ("GetLegalCommands", {"round_id": ""}, INVALID),
    ("GetLegalCommands", {"round_id": "nope#1", "seat": 1}, frozenset({Code.NOT_FOUND})),
    ("ListRounds", {"table_id": "c1", "page_size": -1}, INVALID, "page_size"),
    ("ListRounds", {"table_id": "c1", "page_size": INT32_MIN}, INVALID, "page_size"),
    ("ListRounds", {"table_id": "c1", "player": BIG}, INVALID),
    ("ListRounds", {"table_id": BIG}, INVALID),
    ("ListRounds", {"table_id": "c1", "page_token": "%%%"}, INVALID, "page_token"),
    ("ReplayRound", {"round_id": ""}, INVALID),
    ("VerifyRound", {"round_id": BIG}, INVALID),
    ("ExportRound", {"round_id": "nope#1"}, frozenset({Code.NOT_FOUND})),
    ("GetInclusionProof", {"round_id": "c1#1"}, frozenset({Code.NOT_FOUND})),  # no checkpoint yet
    ("GetInclusionProof", {"round_id": "\x01"}, INVALID),
    ("SubscribeEvents", {"after_position": -1, "stop_at_head": True}, INVALID),
    ("SubscribeEvents", {"after_position": INT64_MIN, "stop_at_head": True}, INVALID),
    ("SubscribeEvents", {"batch_size": -1, "stop_at_head": True}, INVALID),
    ("SubscribeEvents", {"batch_size": INT32_MAX, "stop_at_head": True}, INVALID),
    ("SubscribeEvents", {"partition": 1, "stop_at_head": True}, INVALID),
    ("SubscribeEvents", {"partition": -1, "stop_at_head": True}, INVALID),
]


@pytest.mark.parametrize(
    ("method", "fields", "codes", "on"),
    [
        pytest.param(*case[:3], case[3] if len(case) > 3 else None, id=f"{case[0]}-{i}")
        for i, case in enumerate(READ_CASES)
    ],
)
def test_malformed_reads_are_refused(
    hostile: Hostile, method: str, fields: dict[str, Any], codes: frozenset[Code], on: str | None
) -> None:
    cls = pb.SubscribeEventsRequest if method == "SubscribeEvents" else request_class(method)
    request = cls(**fields)
    hostile.refused("operator", method, request, codes, on)
    hostile.refused(None, method, request, frozenset({Code.UNAUTHENTICATED}))


# --- page tokens and page sizes (AIP-158) --------------------------------------------------------

LISTS: dict[str, dict[str, Any]] = {  # each List method, with a filter that has more than one page of size 1
    "ListStatementEntries": {"wallet_id": "alice"},
    "ListWallets": {},
    "ListTables": {},
    "ListRounds": {"table_id": "c2"},
}
OTHER_FILTER: dict[str, dict[str, Any]] = {
    "ListStatementEntries": {"wallet_id": "bob"},
    "ListRounds": {"table_id": "c1"},
}


FIRST_PAGE = {"no cursor", "cursor null"}  # a token without a cursor: at most the first page (none at all)


def _encode(body: Any, mac: str) -> str:
    """An edited token: the body re-encoded, with the real token's MAC kept (which no longer fits it)."""
    text = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=") + "." + mac


def _real_token(hostile: Hostile, method: str) -> str:
    """A next_page_token the server gave for a first page of one item (the read models follow the log:
    give them a moment)."""
    request = request_class(method)(**LISTS[method], page_size=1)
    for _ in range(100):
        token: str = hostile.apis["operator"].get(METHODS[method][0], method, request).next_page_token
        if token:
            return token
        time.sleep(0.1)
    raise AssertionError(f"{method} gave no next_page_token for a page of 1")


def _tampered(hostile: Hostile, method: str) -> dict[str, str]:
    """Page tokens that are not one the server gave for this method and filter, by what was done to a real one."""
    token = _real_token(hostile, method)
    encoded, _dot, mac = token.rpartition(".")  # (the test knows the form, to tamper with it: api/paging.py)
    body = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    assert isinstance(body, dict) and "c" in body, body
    cursors: dict[str, Any] = {
        "cursor -1": -1,
        "cursor int64 min": INT64_MIN,
        "cursor int64 max + 1": INT64_MAX + 1,
        "cursor 10 kB text": BIG,
        "cursor empty text": "",
        "cursor an object": {"c": 1},
        "cursor null": None,
        "cursor true": True,
        "cursor -1 in a list": [-1],
        "cursor an empty list": [],
    }
    if not isinstance(body["c"], str):  # (a key cursor is an id: other text would be one)
        cursors["cursor text"] = "x"
    if isinstance(body["c"], list):  # (one position per partition)
        cursors["cursor two positions"] = [*body["c"], *body["c"]]
        cursors["cursor int64 max + 1 in a list"] = [INT64_MAX + 1]
    other = next(m for m in LISTS if m != method)
    return {
        "truncated": token[: len(token) // 2],
        "one character more": token + "A",
        "not base64": "%%% not a token %%%",
        "10 kB": token * (10_000 // len(token) + 1),
        "json not an object": _encode([body], mac),
        "another method": _encode({**body, "m": other}, mac),
        "another method's token": _real_token(hostile, other),
        "another filter digest": _encode({**body, "f": "0" * len(str(body.get("f", "")))}, mac),
        "no cursor": _encode({k: v for k, v in body.items() if k != "c"}, mac),
        "no MAC": encoded,
        "another MAC": encoded + "." + ("A" if mac[0] != "A" else "B") + mac[1:],
        "the body alone, re-encoded": _encode(body, mac)[: -len(mac) - 1],
        **{name: _encode({**body, "c": cursor}, mac) for name, cursor in cursors.items()},
    }


@pytest.mark.parametrize("method", LISTS)
def test_tampered_page_tokens_are_invalid_argument(hostile: Hostile, method: str) -> None:
    """A page token grants nothing: one the server did not give, for this method and this filter, is
    INVALID_ARGUMENT on page_token, writes nothing and shows nothing."""
    cls, checked, wrong = request_class(method), 0, []
    first = hostile.apis["operator"].get(METHODS[method][0], method, cls(**LISTS[method]))
    for label, token in _tampered(hostile, method).items():
        request = cls(**LISTS[method], page_token=token)
        if label in FIRST_PAGE or (method == "ListRounds" and label == "cursor an empty list"):
            # (no cursor at all: refused, or read as the first page, which a token cannot widen)
            before = hostile.snapshot()
            code, _message, fields = hostile.send("operator", method, request)
            answer = hostile.apis["operator"].get(METHODS[method][0], method, request) if code == Code.OK else None
            assert hostile.snapshot() == before
            if not ((code == Code.INVALID_ARGUMENT and "page_token" in fields) or answer == first):
                wrong.append(f"{label}: {code.name} on {fields}, and not the first page")
        else:
            try:
                hostile.refused("operator", method, request, INVALID, "page_token")
            except AssertionError as error:
                wrong.append(f"{label}: {str(error).splitlines()[0]}")
        hostile.refused(None, method, request, frozenset({Code.UNAUTHENTICATED}))
        checked += 1
    assert not wrong, f"{method}: page tokens not refused:\n" + "\n".join(wrong)
    real = _real_token(hostile, method)
    if method in OTHER_FILTER:  # a real token, sent with another filter
        request = cls(**OTHER_FILTER[method], page_token=real)
        hostile.refused("operator", method, request, INVALID, "page_token")
        checked += 1
    assert checked >= 15
    # and the real token is a real token
    assert hostile.send("operator", method, cls(**LISTS[method], page_token=real))[0] == Code.OK


@pytest.mark.parametrize(
    ("method", "fields", "most"),
    [
        ("ListStatementEntries", {"wallet_id": "alice", "page_size": 1001}, 1000),
        ("ListStatementEntries", {"wallet_id": "alice", "page_size": INT32_MAX}, 1000),
        ("ListWallets", {"page_size": 1001}, 1000),
        ("ListWallets", {"page_size": INT32_MAX}, 1000),
        ("ListTables", {"page_size": INT32_MAX}, 1000),
        ("ListRounds", {"table_id": "c2", "page_size": 101}, 100),
        ("ListRounds", {"page_size": INT32_MAX}, 100),
    ],
)
def test_page_sizes_above_the_maximum_are_the_maximum(
    hostile: Hostile, method: str, fields: dict[str, Any], most: int
) -> None:
    """AIP-158: a page_size above the method's maximum is the maximum (not an error, not an overflow): here
    everything there is fits, so the page is all of it, and the last."""
    service, items = METHODS[method][0], {"ListStatementEntries": "entries"}.get(method, method[4:].lower())
    cls = request_class(method)
    _real_token(hostile, method)  # (more than one item: a page of one has a next page)
    before = hostile.snapshot()
    answer = hostile.apis["operator"].get(service, method, cls(**fields))
    assert hostile.snapshot() == before
    expected = hostile.apis["operator"].get(service, method, cls(**{**fields, "page_size": most}))
    listed = list(getattr(answer, items))
    assert 1 < len(listed) <= most, len(listed)
    assert listed == list(getattr(expected, items)) and answer.next_page_token == expected.next_page_token == ""


def test_a_filter_on_a_table_that_does_not_exist_lists_nothing(hostile: Hostile) -> None:
    """ListRounds' table_id is a filter (empty: every table), not a parent: an unknown table has no rounds."""
    answer = hostile.apis["operator"].get("RoundService", "ListRounds", pb.ListRoundsRequest(table_id="nope"))
    assert list(answer.rounds) == [] and answer.next_page_token == ""


# --- hypothesis over the request messages ----------------------------------------------------

FRESH = "\x00fresh"  # replaced by a new request id when sent
KNOWN = ("alice", "bob", "carol", "broke", "nope", "c1", "r1", "k1", "c1#1", "c1#2", "r1#1", "k1#1", "")
TEXT = st.one_of(
    st.sampled_from(KNOWN),
    st.text(st.characters(exclude_categories=cast(Any, ("Cs",))), max_size=40),  # (no lone surrogates)
    st.text(st.characters(max_codepoint=0x7F), max_size=200),
    st.builds(
        lambda s, n: s * n, st.sampled_from(["x", "ก", "\x00", "😀"]), st.sampled_from([127, 128, 129, 257, 4096])
    ),
)
RANGES = {
    FieldDescriptor.TYPE_INT64: (INT64_MIN, INT64_MAX),
    FieldDescriptor.TYPE_INT32: (INT32_MIN, INT32_MAX),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_ENUM: (INT32_MIN, INT32_MAX),
}


def _scalar(f: FieldDescriptor, method: str) -> st.SearchStrategy[Any]:
    if f.type == FieldDescriptor.TYPE_STRING:
        if f.name == "request_id":
            return st.one_of(st.just(FRESH), st.just(FRESH), TEXT)
        return TEXT
    if f.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        assert f.message_type is not None
        return messages(f.message_type, method)
    low, high = RANGES[f.type]
    special = [v for v in (0, 1, 2, 5, 10, 17, 18, 100, 1000, -1, low, high, low + 1, high - 1) if low <= v <= high]
    if f.type == FieldDescriptor.TYPE_ENUM:
        assert f.enum_type is not None
        special += [v.number for v in f.enum_type.values]
    return st.one_of(st.sampled_from(special), st.integers(low, high), st.integers(-3, 20).filter(lambda v: v >= low))


def messages(descriptor: Descriptor, method: str) -> st.SearchStrategy[Message]:
    cls = message_factory.GetMessageClass(descriptor)
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in descriptor.fields:
        base = _scalar(f, method)
        if f.is_repeated:
            parts[f.name] = st.lists(base, max_size=6) | st.lists(base, min_size=20, max_size=40)
        elif f.has_presence:
            parts[f.name] = st.none() | base
        else:
            parts[f.name] = base
    if method == "SubscribeEvents":
        parts["stop_at_head"] = st.just(True)  # (the stream otherwise waits for new events)

    def build(values: dict[str, Any]) -> Message:
        return cls(**{k: v for k, v in values.items() if v is not None})

    return st.fixed_dictionaries(parts).map(build)


FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("method", [*COMMANDS, *READS, "SubscribeEvents"])
def test_fuzzed_requests_get_a_documented_answer(hostile: Hostile, method: str) -> None:
    descriptor = pb.SubscribeEventsRequest.DESCRIPTOR if method == "SubscribeEvents" else METHODS[method][1].input_type
    fresh = itertools.count()

    @FUZZ
    @given(request=messages(descriptor, method))
    def check(request: Message) -> None:
        if getattr(request, "request_id", None) == FRESH:
            request.request_id = f"fuzz-{method}-{next(fresh)}"  # type: ignore[attr-defined]
        before = hostile.app.max_position
        code, message, _fields = hostile.send("operator", method, request)
        # (a feed after a position past its log's head is OUT_OF_RANGE: docs/api.md, the errors table)
        documented = REFUSED | {Code.OK} | ({Code.OUT_OF_RANGE} if method == "SubscribeEvents" else set())
        assert code in documented, f"{method}: {code.name} {message!r} for {request}"
        if code is not Code.OK:
            assert hostile.app.max_position == before, f"refused {method} wrote events ({code.name}: {message})"
        position = hostile.app.max_position
        code, message, _fields = hostile.send(None, method, request)
        assert code == Code.UNAUTHENTICATED and hostile.app.max_position == position, (code, message)

    check()


# --- found bugs ------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _text(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


RAW_DEPOSIT = _text(1, b"raw-1") + _text(2, b"alice")
RAW = {
    "amount 2**64 - 1 (wraps to -1)": RAW_DEPOSIT + _varint(3 << 3) + _varint(2**64 - 1),
    "amount 2**63 (wraps to int64 min)": RAW_DEPOSIT + _varint(3 << 3) + _varint(2**63),
    "a string where the amount is": RAW_DEPOSIT + _text(3, b"100"),
    "an unknown field": RAW_DEPOSIT + _varint(3 << 3) + _varint(0) + _varint(99 << 3) + _varint(1),
}
RAW_MALFORMED = {
    "amount 2**70 (an 11-byte varint)": RAW_DEPOSIT + _varint(3 << 3) + _varint(2**70),
    "a varint that never ends": RAW_DEPOSIT + _varint(3 << 3) + b"\xff" * 12,
    "invalid UTF-8 in wallet_id": _text(1, b"raw-2") + _text(2, b"\xff\xfe") + _varint(3 << 3) + _varint(5),
    "a truncated message": RAW_DEPOSIT[:-3],
}


def _raw_call(hostile: Hostile, body: bytes, token: str | None) -> Code:
    call = hostile.channel.unary_unary(
        "/pokdeng.v1.WalletService/Deposit",
        request_serializer=lambda b: b,
        response_deserializer=pb.DepositResponse.FromString,
    )
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        call(body, metadata=metadata, timeout=10)
    except grpc.RpcError as error:
        return error.code()
    return Code.OK


@pytest.mark.parametrize("body", RAW.values(), ids=RAW.keys())
def test_raw_wire_values_that_parse_are_refused(hostile: Hostile, body: bytes) -> None:
    before = hostile.snapshot()
    assert _raw_call(hostile, body, TOKENS["operator"]) == Code.INVALID_ARGUMENT
    assert hostile.snapshot() == before


@pytest.mark.parametrize("body", RAW_MALFORMED.values(), ids=RAW_MALFORMED.keys())
def test_bytes_that_are_not_a_request_are_invalid_argument(hostile: Hostile, body: bytes) -> None:
    before = hostile.snapshot()
    code = _raw_call(hostile, body, TOKENS["operator"])
    assert hostile.snapshot() == before  # (nothing is written either way)
    assert code == Code.INVALID_ARGUMENT, code


def test_bytes_that_are_not_a_request_without_a_token_are_unauthenticated(hostile: Hostile) -> None:
    assert _raw_call(hostile, RAW_MALFORMED["invalid UTF-8 in wallet_id"], None) == Code.UNAUTHENTICATED


@pytest.mark.parametrize("count", [500, 1000])
def test_many_seats_to_reveal_are_invalid_argument(hostile: Hostile, count: int) -> None:
    seats = list(range(1, count + 1))
    request = pb.BankerRevealRequest(request_id=f"reveal-{count}", round_id="c1#2", seats=seats)
    hostile.refused("operator", "BankerReveal", request, INVALID)


def test_subscribe_after_the_last_int64_position_is_not_internal(hostile: Hostile) -> None:
    request = pb.SubscribeEventsRequest(after_position=INT64_MAX, stop_at_head=True)
    code, message, _fields = hostile.send("operator", "SubscribeEvents", request)
    assert code in (Code.OK, Code.INVALID_ARGUMENT), (code, message)


def test_a_wallet_balance_never_leaves_int64(tmp_path: Path) -> None:
    app = PokdengApp({"PERSISTENCE_MODULE": "eventsourcing.popo"}, vault=SeedVault.from_hex(VAULT_KEY))
    server, port = create_server("127.0.0.1:0", app, tokens=token_store(), max_workers=2)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        ops, alice = Api(channel, TOKENS["operator"], prefix="op"), Api(channel, TOKENS["alice"], prefix="al")
        ops.cmd("WalletService", "OpenWallet", pb.OpenWalletRequest(wallet_id="alice"))
        table = pb.OpenTableRequest(table_id="t", profile=pb.PROFILE_KINGMAKER, min_stake=100, max_stake=1000, seats=2)
        ops.cmd("TableService", "OpenTable", table)
        alice.cmd("TableService", "TakeSeat", pb.TakeSeatRequest(table_id="t", player="alice", seat=1))
        for number in range(40):  # top the wallet up to int64 max, stake, play; until alice wins once
            balance = app.get_wallet("alice").balance
            if balance < MAX_AMOUNT:
                ops.cmd("WalletService", "Deposit", pb.DepositRequest(wallet_id="alice", amount=MAX_AMOUNT - balance))
            round_id = ops.cmd("RoundService", "StartRound", pb.StartRoundRequest(table_id="t")).round.round_id
            bet = pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=1000)
            try:
                alice.cmd("RoundService", "PlaceBet", bet)
            except grpc.RpcError:
                return  # refusing a stake whose win could leave int64 is a fix
            play_round(ops, {"alice": alice}, round_id, Choices(random.Random(number)))
            view = app.get_wallet("alice")
            if view.balance > MAX_AMOUNT:
                break
        assert app.get_wallet("alice").balance <= MAX_AMOUNT
        ops.wallet("alice")  # and the API can show it
    finally:
        channel.close()
        server.stop(None).wait(10)
        app.close()


def test_a_round_settles_after_its_winner_was_topped_up_to_int64_max() -> None:
    app = PokdengApp({"PERSISTENCE_MODULE": "eventsourcing.popo"}, vault=SeedVault.from_hex(VAULT_KEY))
    try:
        d = play.Driver(app, prefix="top", chooser=play.Chooser(random.Random(3)))
        play.open_wallets(d, ["alice"], 1_000_000)
        play.open_table(d, "t", "kingmaker", [(1, "alice")])
        for _ in range(20):
            round_id = play.start_round(d, "t")
            play.place_bets(d, round_id, [(1, "alice", 1000)])
            balance = app.get_wallet("alice").balance
            with contextlib.suppress(DomainError):  # refusing the top-up would be a fix
                d.call("deposit", "alice", MAX_AMOUNT - balance)
            play.drive_round(d, round_id)  # the round must play to its close
            balance = app.get_wallet("alice").balance
            assert balance <= MAX_AMOUNT
            if balance > 1_000_000:
                d.call("withdraw", "alice", balance - 1_000_000)
    finally:
        app.close()
