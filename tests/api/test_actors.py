"""Through the gRPC API, an operator token's start and deal name it in the record: ``round_opened.by`` and
``cards_dealt.by`` (docs/events.md, "Who sent an operator command"), in the typed events as in the stored data."""

from __future__ import annotations

from pathlib import Path

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.auth import TokenEntry, TokenStore, token_digest
from pokdeng_service.application.principal import Principal, Role

from .client import PLAYERS, TOKENS, Api, bet, open_table, open_wallets, payload, start_round
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
