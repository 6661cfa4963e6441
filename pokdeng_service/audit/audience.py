"""Whom a bundle is made for, and what its ``balances`` may then hold (docs/audit.md, "balances"): every wallet of
the settlement for the operator or an auditor, a player's own for ``player:X``; each net the settlement's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pokdeng_core import events as re
from pokdeng_service.store.facts import Recorded


def balances_problem(bundle: dict[str, Any], facts: Sequence[Recorded]) -> str | None:
    """What is wrong with a bundle's ``balances`` (docs/audit.md, "balances"), or None: each listed wallet's ``net``
    is its net in the round's settlement; a bundle made for the ``operator`` or an ``auditor`` lists every wallet
    of the settlement, in its order, one made for ``player:X`` (a player of the round: a seat's holder, a
    bettor or the banker) X's alone (none if X has no net in it); ``before`` and ``after`` are integers for every
    wallet or null for every one (a round on the platform's wallets). A bundle of version 1 says nothing of
    whom it was made for: its balances may be any of the settlement's wallets."""
    settled = [f for f in facts if f.kind == re.RoundSettled.kind]
    wallets = [(player, net) for player, _reserved, net in settled[-1].data["wallets"]] if settled else []
    nets = dict(wallets)
    listed = bundle["balances"]
    for entry in listed:
        wallet = entry["wallet"]
        if wallet not in nets:
            return f"wallet {wallet!r} has no net in the settlement"
        if entry["net"] != nets[wallet]:
            return f"wallet {wallet!r}: net {entry['net']}, the settlement's is {nets[wallet]}"
    if len({entry["before"] is None for entry in listed}) > 1:
        return "some balances are null and others not (a round's wallets are all the store's or all the platform's)"
    if bundle["format_version"] < 2:
        return None
    made_for: str = bundle["made_for"]
    if made_for.startswith("player:"):
        player = made_for.removeprefix("player:")
        if player not in _participants(facts):
            return f"made for player {player!r}, who takes no part in the round"
        expected = [player] if player in nets else []
    else:
        expected = [wallet for wallet, _net in wallets]
    got = [entry["wallet"] for entry in listed]
    if got != expected:
        return f"made for {made_for}: balances of {got}, where the settlement gives {expected}"
    return None


def _participants(facts: Sequence[Recorded]) -> set[str]:
    """The round's players: its seats' holders, its banker, its bettors (who may have a bundle of their own)."""
    people: set[str] = set()
    for fact in facts:
        if fact.kind == re.RoundOpened.kind:
            people.update(holder for _seat, holder in fact.data["seats"] if holder)
            if fact.data["banker_player"]:
                people.add(fact.data["banker_player"])
        elif fact.kind in (re.BetPlaced.kind, re.SideBetPlaced.kind):
            people.add(fact.data["player"])
    return people


__all__ = ["balances_problem"]
