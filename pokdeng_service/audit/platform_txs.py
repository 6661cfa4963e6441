"""A platform-wallet round's transactions in its bundle (``platform_transactions``, docs/audit.md), checked offline.

A round whose money is a platform's (``--wallet remote``, docs/wallet.md) has an outbox of transactions
(``wallet.outbox``): a debit per stake, a credit per player at the settlement, rollbacks at a void. Its bundle
carries them, as ``bundle_transactions`` writes them, and ``transactions_problem`` holds them to the round's own
events, with no store: the ids are the deterministic ones, every wallet's accepted debits are its reserved stakes,
a settled round credits each wallet its reservation plus its net for exactly its debits, a void rolls back every
accepted debit, and nothing is left open. This module reads no store and no wallet (``pokdeng verify BUNDLE``
loads it): the tx id formulas are restated here as docs/wallet.md states them (a test holds them to
``wallet.outbox``'s).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pokdeng_core import events as re
from pokdeng_service.audit.forms import TX_TYPES as TX_TYPES
from pokdeng_service.store.facts import Recorded

DEBIT_PURPOSES = ("bet", "cover", "side")
DEBIT_STATUSES = ("requested", "accepted", "refused", "rollback_requested", "rolled_back")
CREDIT_STATUSES = ("requested", "applied", "refused")
OPEN = ("requested", "rollback_requested")  # asked of the platform, no definite answer recorded
UNDONE = ("rollback_requested", "rolled_back")


def debit_id(round_id: str, purpose: str, seat: int, bettor: str, attempt: int) -> str:
    """``<round>:<purpose>:<seat>:<bettor>:<n>``, ``n`` the stake's earlier debits (``wallet.outbox.debit_tx_id``)."""
    return f"{round_id}:{purpose}:{seat}:{bettor}:{attempt}"


def credit_id(round_id: str, player: str) -> str:
    """``<round>:credit:<player>`` (``wallet.outbox.credit_tx_id``)."""
    return f"{round_id}:credit:{player}"


def bundle_transactions(txs: Iterable[Any], currency: str) -> list[dict[str, Any]]:
    """The outbox's transactions (``wallet.outbox.Tx``, in the order they were requested) as a bundle holds them."""
    out = []
    for tx in txs:
        debit = tx.kind == "debit"
        out.append(
            {
                "tx_id": tx.tx_id,
                "kind": tx.kind,
                "player": tx.player,
                "amount": tx.amount,
                "currency": currency,
                "purpose": tx.purpose if debit else "credit",
                "seat": tx.seat if debit else None,
                "bettor": tx.bettor if debit else None,
                "status": tx.status,
                "accepted": bool(tx.accepted) if debit else False,
                "debits": [] if debit else list(tx.debits),
                "resolved": tx.resolved,
            }
        )
    return out


def round_money(facts: Iterable[Recorded]) -> tuple[str, dict[str, int], dict[str, int]]:
    """(outcome, reserved per player, nets) of a round from its facts: what it reserves for each player (its bets'
    and side bets' ``reserved``, a player-banker's ``banker_reserved``; the settlement's or the void's wallets once
    there), and the settlement's nets; the outcome of ``round_closed`` ("" while open)."""
    reserved: dict[str, int] = {}
    nets: dict[str, int] = {}
    outcome, banker = "", None
    for fact in facts:
        data = fact.data
        if fact.kind == re.RoundOpened.kind:
            banker = data.get("banker_player")
        elif fact.kind in (re.BetPlaced.kind, re.SideBetPlaced.kind):
            reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
            if data.get("banker_reserved") and banker:
                reserved[banker] = reserved.get(banker, 0) + data["banker_reserved"]
        elif fact.kind == re.RoundSettled.kind:
            reserved = {player: held for player, held, _net in data["wallets"]}
            nets = {player: net for player, _held, net in data["wallets"]}
        elif fact.kind == re.RoundVoided.kind:
            reserved = {player: held for player, held in data["wallets"]}
        elif fact.kind == re.RoundClosed.kind:
            outcome = data["outcome"]
    return outcome, reserved, nets


def transactions_problem(
    round_id: str, made_for: str, txs: Sequence[Mapping[str, Any]], facts: Sequence[Recorded]
) -> str | None:
    """What is wrong with a bundle's ``platform_transactions`` (docs/audit.md, "platform transactions"), or None.
    ``txs`` are of the documented types (the shape check)."""
    opened = next((f.data for f in facts if f.kind == re.RoundOpened.kind), None)
    if opened is None:
        return "the events have no round_opened"
    currency, banker = opened.get("currency", "THB"), opened.get("banker_player")
    outcome, reserved, nets = round_money(facts)
    if outcome not in ("settled", "voided"):
        return f"the round is not closed settled or voided ({outcome or 'open'})"
    player = made_for.removeprefix("player:") if made_for.startswith("player:") else None
    accepted: dict[str, list[str]] = {}  # each player's accepted debits, in order (found by step 1)
    problem = _listed_problem(round_id, made_for, player, currency, banker, txs, accepted)
    if problem is not None:
        return problem
    audience = [p for p, held in reserved.items() if held and (player is None or p == player)]
    problem = _stakes_problem(txs, accepted, {p: reserved[p] for p in audience})
    if problem is not None:
        return problem
    if outcome == "settled":
        problem = _settled_problem(txs, accepted, audience, reserved, nets)
    else:
        problem = _voided_problem(txs)
    return problem if problem is not None else _open_problem(txs)


def _listed_problem(
    round_id: str,
    made_for: str,
    player: str | None,
    currency: str,
    banker: str | None,
    txs: Sequence[Mapping[str, Any]],
    accepted: dict[str, list[str]],
) -> str | None:
    """1. each transaction: its kind's fields, its id the deterministic one, the round's currency, the audience
    (``player``: the one player a bundle made for a player holds). Each player's accepted debits go to
    ``accepted``."""
    ids: set[str] = set()
    attempts: dict[tuple[str, int, str], int] = {}
    for i, tx in enumerate(txs):
        tx_id, kind, who = tx["tx_id"], tx["kind"], tx["player"]
        if tx_id in ids:
            problem: str | None = "its id appears twice"
        elif tx["amount"] < 0:
            problem = "a negative amount"
        elif tx["currency"] != currency:
            problem = f"currency {tx['currency']}, the round's is {currency}"
        elif player is not None and who != player:
            problem = f"of {who!r}, in a bundle made for {made_for} (which holds its own alone)"
        elif kind == "debit":
            problem = _debit_problem(round_id, banker, tx, attempts, accepted)
        elif kind == "credit":
            problem = _credit_problem(round_id, tx)
        else:
            problem = f"kind {kind!r} is neither debit nor credit"
        if problem is not None:
            return f"transaction {i} ({tx_id}): {problem}"
        ids.add(tx_id)
    return None


def _debit_problem(
    round_id: str,
    banker: str | None,
    tx: Mapping[str, Any],
    attempts: dict[tuple[str, int, str], int],
    accepted: dict[str, list[str]],
) -> str | None:
    """A debit's fields, its deterministic id (``attempts``: the stake's debits so far), its owner and status."""
    tx_id, who, status = tx["tx_id"], tx["player"], tx["status"]
    purpose, seat, bettor = tx["purpose"], tx["seat"], tx["bettor"]
    if purpose not in DEBIT_PURPOSES or seat is None or bettor is None or tx["debits"]:
        return "a debit is of purpose bet, cover or side, with a seat and a bettor, no debits"
    key = (purpose, seat, bettor)
    want = debit_id(round_id, purpose, seat, bettor, attempts.get(key, 0))
    attempts[key] = attempts.get(key, 0) + 1
    if tx_id != want:
        return f"not the deterministic id {want}"
    owner = banker if purpose == "cover" else bettor
    if who != owner:
        return f"a {purpose} debit of {who!r}, where the stake's is {owner!r}"
    if status not in DEBIT_STATUSES:
        return f"status {status!r} is not a debit's"
    if status not in UNDONE and tx["accepted"] != (status == "accepted"):
        return f"accepted {tx['accepted']} with status {status}"
    if tx["accepted"]:
        accepted.setdefault(who, []).append(tx_id)
    return None


def _credit_problem(round_id: str, tx: Mapping[str, Any]) -> str | None:
    """A credit's fields, its deterministic id and its status."""
    if tx["purpose"] != "credit" or tx["seat"] is not None or tx["bettor"] is not None or tx["accepted"]:
        return "a credit is of purpose credit, with no seat, no bettor, not accepted"
    if tx["tx_id"] != credit_id(round_id, tx["player"]):
        return f"not the deterministic id {credit_id(round_id, tx['player'])}"
    if tx["status"] not in CREDIT_STATUSES:
        return f"status {tx['status']!r} is not a credit's"
    return None


def _stakes_problem(
    txs: Sequence[Mapping[str, Any]], accepted: Mapping[str, list[str]], wanted: dict[str, int]
) -> str | None:
    """2. every wallet's accepted debits are its reserved stakes (``wanted``, of the bundle's audience)."""
    placed = {p: sum(t["amount"] for t in txs if t["kind"] == "debit" and t["accepted"] and t["player"] == p)
              for p in accepted}  # fmt: skip
    if dict(sorted(placed.items())) != dict(sorted(wanted.items())):
        return f"the accepted debits {dict(sorted(placed.items()))} are not the round's stakes {wanted}"
    return None


def _settled_problem(
    txs: Sequence[Mapping[str, Any]],
    accepted: Mapping[str, list[str]],
    audience: Sequence[str],
    reserved: Mapping[str, int],
    nets: Mapping[str, int],
) -> str | None:
    """3. a settled round: the settlement's credit to each wallet of the audience, no other, no stake rolled back."""
    credits = {t["player"]: t for t in txs if t["kind"] == "credit"}
    for p in audience:
        credit = credits.pop(p, None)
        pays = f"{reserved[p] + nets.get(p, 0)} (its reserved {reserved[p]} + its net {nets.get(p, 0)})"
        if credit is None:
            return f"no credit to {p}, whom the settlement pays {pays}"
        if credit["amount"] != reserved[p] + nets.get(p, 0):
            return f"the credit to {p} is {credit['amount']}; the settlement pays {pays}"
        mine = accepted.get(p, [])
        if list(credit["debits"]) != mine:
            return f"the credit to {p} settles {credit['debits']}, not its accepted debits {mine}"
    if credits:
        return f"credits to {sorted(credits)}, whom the settlement does not pay"
    undone = [t["tx_id"] for t in txs if t["kind"] == "debit" and t["accepted"] and t["status"] in UNDONE]
    if undone:
        return f"a settled round rolls back its placed stakes {undone}"
    return None


def _voided_problem(txs: Sequence[Mapping[str, Any]]) -> str | None:
    """3. a voided round: no credit, every placed stake rolled back."""
    credits = {t["player"]: t for t in txs if t["kind"] == "credit"}
    if credits:
        return f"credits to {sorted(credits)} in a voided round"
    kept = [t["tx_id"] for t in txs if t["kind"] == "debit" and t["accepted"] and t["status"] not in UNDONE]
    if kept:
        return f"the void leaves debits {kept} in force (not rolled back)"
    return None


def _open_problem(txs: Sequence[Mapping[str, Any]]) -> str | None:
    """4. nothing left open in a closed round (nor a credit refused): unless an operator resolved it."""
    for t in txs:
        unfinished = t["status"] in OPEN or (t["kind"] == "credit" and t["status"] == "refused")
        if unfinished and not t["resolved"]:
            return f"transaction {t['tx_id']} is {t['status']} in a closed round: {t['amount']} to {t['player']}"
        if t["resolved"] and not unfinished:
            return f"transaction {t['tx_id']} is {t['status']}: nothing an operator resolves"
    return None


def resolved_transactions(txs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The transactions an operator resolved outside the protocol (``pokdeng wallet resolve``), as said in a
    warning: a bundle cannot show what was done for them."""
    return [f"{t['tx_id']} ({t['status']}): {t['resolved']}" for t in txs if t["resolved"]]


__all__ = [
    "bundle_transactions",
    "credit_id",
    "debit_id",
    "resolved_transactions",
    "round_money",
    "transactions_problem",
]
