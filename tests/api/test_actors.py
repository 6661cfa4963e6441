"""Through the gRPC API, an operator token's commands name it in the record (docs/events.md, "Who sent a
command"), in the typed events as in the stored data: its start and deal (``round_opened.by``,
``cards_dealt.by``), and the decisions it sends for a player, the platform or the house's hand
(``bet_placed.by``, ``client_seed_contributed.by``, ``card_drawn.by``, ``player_stood.by``,
``hands_revealed.by``); a player's own decisions leave ``by`` empty."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.auth import TokenEntry, TokenStore, token_digest
from pokdeng_service.application.principal import Principal, Role

from .client import PLAYERS, TOKENS, Api, Choices, bet, open_table, open_wallets, payload, play_round, seat, start_round
from .conftest import StartServer, make_app, sqlite_env

DESK_TOKEN = "desk-7-token-0123456789"


def _tokens() -> TokenStore:
    entries = [TokenEntry(token_digest(DESK_TOKEN), Principal(Role.OPERATOR, name="desk-7"))]
    entries += [TokenEntry(token_digest(TOKENS[p]), Principal(Role.PLAYER, p)) for p in PLAYERS]
    return TokenStore(entries)


def test_an_operator_tokens_start_and_deal_name_it(tmp_path: Path, start_server: StartServer) -> None:
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app, tokens=_tokens())
    try:
        desk = Api(served.channel, DESK_TOKEN, ids=served.ids, prefix="desk")
        alice = Api(served.channel, TOKENS["alice"], ids=served.ids, prefix="alice")
        open_wallets(desk, ["alice"])
        open_table(desk, "t", pb.PROFILE_ANTE, min_stake=100, max_stake=1000, seats=0)
        round_id = start_round(desk, "t").round_id
        bet(alice, round_id, 1, "alice", 200)
        desk.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
        for reader in (desk, alice):  # (the player reads the round it plays, its sender too)
            events = {e.WhichOneof("event"): e for e in reader.round(round_id).events}
            assert events["round_opened"].round_opened.by == "operator:desk-7"
            assert events["cards_dealt"].cards_dealt.by == "operator:desk-7"
            assert payload(events["round_opened"])["by"] == payload(events["cards_dealt"])["by"] == "operator:desk-7"
    finally:
        served.stop()
        app.close()


def _choices(events: Any, number: int) -> list[Any]:
    """The typed draws and stays chosen for seat ``number`` (0: the banker's)."""
    out = []
    for event in events:
        member = event.WhichOneof("event")
        if member in ("card_drawn", "player_stood"):
            typed = getattr(event, member)
            if typed.seat == number and typed.reason == pb.ACTION_REASON_CHOICE:
                out.append(event)
    return out


def test_an_operator_tokens_decisions_for_a_player_and_the_house_name_it(
    tmp_path: Path, start_server: StartServer
) -> None:
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app, tokens=_tokens())
    try:
        desk = Api(served.channel, DESK_TOKEN, ids=served.ids, prefix="desk")
        alice = Api(served.channel, TOKENS["alice"], ids=served.ids, prefix="alice")
        bob = Api(served.channel, TOKENS["bob"], ids=served.ids, prefix="bob")
        open_wallets(desk, ["alice", "bob"])
        open_table(desk, "t", pb.PROFILE_CLASSIC, min_stake=100, max_stake=1000)
        seat(alice, "t", "alice", 1)
        seat(bob, "t", "bob", 2)
        choices = Choices(random.Random(7), reveal=0.5)
        for _ in range(30):  # (until alice's hand and the house's chose: a pok chooses nothing)
            round_id = start_round(desk, "t").round_id
            bet(desk, round_id, 1, "alice", 200)  # the desk stakes for alice, bob for himself
            bet(bob, round_id, 2, "bob", 200)
            platform = pb.ContributeSeedRequest(round_id=round_id, player="", client_seed="the desk's")
            desk.cmd("RoundService", "ContributeSeed", platform)
            play_round(desk, {"alice": desk, "bob": bob}, round_id, choices)  # (the house's hand: the desk)
            events = list(alice.round(round_id).events)  # (alice reads who acted for her)
            if not _choices(events, 1) or not _choices(events, 0):
                continue
            bets = {e.bet_placed.player: e for e in events if e.WhichOneof("event") == "bet_placed"}
            assert bets["alice"].bet_placed.by == payload(bets["alice"])["by"] == "operator:desk-7"
            assert bets["bob"].bet_placed.by == payload(bets["bob"])["by"] == ""
            contributed = [e for e in events if e.WhichOneof("event") == "client_seed_contributed"]
            assert [e.client_seed_contributed.by for e in contributed] == ["", "operator:desk-7"]  # (opening, desk)
            for number, by in ((1, "operator:desk-7"), (2, ""), (0, "operator:desk-7")):
                for event in _choices(events, number):
                    member = event.WhichOneof("event")
                    assert getattr(event, member).by == payload(event)["by"] == by, (number, member)
            for event in events:
                if event.WhichOneof("event") == "hands_revealed":
                    revealed = event.hands_revealed
                    assert revealed.by == ("operator:desk-7" if revealed.selective else "")
            verdict = desk.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id))
            assert verdict.ok, verdict
            return
        raise AssertionError("no round of 30 had alice's and the house's choices")
    finally:
        served.stop()
        app.close()
