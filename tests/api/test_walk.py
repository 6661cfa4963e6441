"""The walk of one command: a PlaceBet over gRPC authenticates once, loads at most the round and the
bettor's wallet, and validates its fields once. The counts are the pipeline's contract; they fail here
if any layer starts doing the work again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.auth import Authenticator
from pokdeng_service.application import PokdengApp, pipeline
from pokdeng_service.application.commanding import Command

from .client import bet, open_table, open_wallets, seat, start_round
from .conftest import Served


def _counting(counts: Counter[str], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return function(*args, **kwargs)

    return counted


@pytest.mark.parametrize("warm", [True, False], ids=["cached", "cold"])
def test_one_place_bet_authenticates_once_loads_two_aggregates_and_validates_once(
    local: Served, monkeypatch: pytest.MonkeyPatch, warm: bool
) -> None:
    ops, alice = local.api("operator"), local.api("alice")
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "w", pb.PROFILE_CLASSIC, seats=4)
    seat(alice, "w", "alice", 1)
    round_id = start_round(ops, "w").round_id
    if not warm:  # nothing cached: every aggregate comes from the store
        cache = local.app.repository.cache
        if cache is not None:
            cache.cache.clear()
    counts: Counter[str] = Counter()
    loaded: list[str] = []

    def load(self: PokdengApp, uuid: Any, cls: type[Any], what: str, ident: str) -> Any:
        counts["load"] += 1
        loaded.append(f"{what}:{ident}")
        return original_get(self, uuid, cls, what, ident)

    original_get = PokdengApp.get_checked
    monkeypatch.setattr(PokdengApp, "get_checked", load)
    monkeypatch.setattr(Authenticator, "principal", _counting(counts, "authenticate", Authenticator.principal))
    monkeypatch.setattr(Command, "violations", _counting(counts, "validate", Command.violations))
    monkeypatch.setattr(pipeline, "check", _counting(counts, "check", pipeline.check))

    reply = bet(alice, round_id, 1, "alice", 500)

    assert [b.player for b in reply.round.bets] == ["alice"]
    assert counts["authenticate"] == 1, counts
    assert counts["validate"] == 1 and counts["check"] == 1, counts
    assert counts["load"] <= 2, loaded
    assert set(loaded) <= {f"round:{round_id}", "wallet:alice"}, loaded
