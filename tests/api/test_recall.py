"""Game recall: ListRounds gives the last closed rounds, newest first, with their cards and events."""

from __future__ import annotations

import random
from pathlib import Path

import grpc
import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.readmodels import ReadModels

from .client import Api, Choices, bet, error_of, open_table, open_wallets, play_round, seat, start_round
from .conftest import Served, StartServer, make_app, sqlite_env


def _history(served: Served) -> list[str]:
    """Three closed rounds at table t (alice in all, bob in the last two), then one open round."""
    ops, players = served.api("operator"), served.players()
    open_wallets(ops, ["alice", "bob", "carol"])
    open_table(ops, "t", pb.PROFILE_CLASSIC, seats=4)
    seat(players["alice"], "t", "alice", 1)
    seat(players["bob"], "t", "bob", 2)
    closed = []
    for n in range(3):
        round_id = start_round(ops, "t").round_id
        bet(players["alice"], round_id, 1, "alice", 100)
        if n:
            bet(players["bob"], round_id, 2, "bob", 100)
        closed.append(play_round(ops, players, round_id, Choices(random.Random(n))).round_id)
    bet(players["alice"], start_round(ops, "t").round_id, 1, "alice", 100)
    return closed


def _listed(api: Api, **fields: object) -> list[str]:
    request = pb.ListRoundsRequest(view=pb.ROUND_VIEW_FULL, **fields)  # type: ignore[arg-type]
    answer = api.get("RoundService", "ListRounds", request)
    assert all(
        r.phase == pb.ROUND_PHASE_CLOSED and r.events and all(c for h in r.hands for c in h.cards)
        for r in answer.rounds
    )
    return [r.round_id for r in answer.rounds]


def test_recall_by_table_without_read_models(local: Served) -> None:
    one, two, three = _history(local)
    ops = local.api("operator")
    assert _listed(ops, table_id="t") == [three, two, one]
    assert _listed(ops, table_id="t", page_size=2) == [three, two]
    assert _listed(local.api("auditor"), table_id="t", player="bob") == [three, two]
    assert _listed(local.api("bob"), table_id="t") == [three, two]  # a player's own rounds
    assert _listed(local.api("carol"), table_id="t") == []
    error = error_of(lambda: ops.get("RoundService", "ListRounds", pb.ListRoundsRequest(player="bob")))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT  # no index: a table is needed


@pytest.fixture
def indexed(tmp_path: Path, start_server: StartServer) -> Served:
    env = sqlite_env(tmp_path)
    app = make_app(env)
    models = ReadModels(env)
    served = start_server(app, read_models=models)
    served.models = models  # type: ignore[attr-defined]
    return served


def test_recall_by_player_from_the_read_models(indexed: Served) -> None:
    one, two, three = _history(indexed)
    indexed.models.catch_up(indexed.app)  # type: ignore[attr-defined]
    try:
        assert _listed(indexed.api("operator"), player="alice") == [three, two, one]
        assert _listed(indexed.api("bob")) == [three, two]
        assert _listed(indexed.api("alice"), page_size=1) == [three]
        assert _listed(indexed.api("operator"), table_id="t", player="bob", page_size=1) == [three]
    finally:
        indexed.stop()
        indexed.models.close()  # type: ignore[attr-defined]
        indexed.app.close()


def test_a_forged_view_row_never_lists_a_round_its_record_does_not_give_the_player(
    indexed: Served, tmp_path: Path, caplog: pytest.LogCaptureFixture, start_server: StartServer
) -> None:
    """A row of the read models that says carol played round one (a restored or edited view) does not make
    carol's ListRounds return it: the record of each listed round decides, with an integrity alert; on a server
    that has the rounds cached and on one freshly started (the page's rounds read from the store together)."""
    import sqlite3

    one, two, three = _history(indexed)
    indexed.models.catch_up(indexed.app)  # type: ignore[attr-defined]
    try:
        with sqlite3.connect(tmp_path / "pokdeng.sqlite") as conn:
            position = conn.execute("SELECT closed_position FROM pokdeng_round_history WHERE round_id = ?", (one,))
            conn.execute(
                "INSERT INTO pokdeng_round_players (player, closed_position, round_id, table_id) VALUES (?, ?, ?, ?)",
                ("carol", position.fetchone()[0], one, "t"),
            )
        cold_app = make_app(sqlite_env(tmp_path))
        cold = start_server(cold_app, read_models=indexed.models)  # type: ignore[attr-defined]
        for served in (indexed, cold):
            caplog.clear()
            assert _listed(served.api("carol")) == []
            assert _listed(served.api("operator"), player="carol") == []
            assert "READ MODEL DISAGREES" in caplog.text and one in caplog.text
            assert _listed(served.api("bob")) == [three, two]
        cold.stop()
        cold_app.close()
    finally:
        indexed.stop()
        indexed.models.close()  # type: ignore[attr-defined]
        indexed.app.close()
