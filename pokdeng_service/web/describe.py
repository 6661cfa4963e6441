"""Each event of a round in words: a sequence of text and card faces, never markup.

A part is either text or a card; the template escapes the text and draws the card. So a player
id that looks like a card (``A♠``) or holds markup is shown as the text it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import groupby
from typing import Any

from pokdeng_core.cards import parse_card
from pokdeng_core.currencies import DEFAULT
from pokdeng_service.money import format_money


@dataclass(frozen=True)
class Face:
    """One card as drawn on the page: ``step`` is the step at which it appears (0: from the start)."""

    text: str  # the record's text, "10H"
    rank: str  # "10"
    suit: str  # "♥"
    red: bool
    step: int = 0
    shoe_index: int | None = None  # its position in the shoe (deck_order), 0 = dealt first

    @property
    def label(self) -> str:
        return self.rank + self.suit


def face(text: str, step: int = 0, shoe_index: int | None = None) -> Face:
    """A card's face; ``""`` (a card the page's reader may not see yet, in an open round): face down."""
    if not text:
        return Face("", "?", "", False, step, None)
    card = parse_card(text)
    return Face(str(card), card.rank.text, card.suit.symbol, card.suit.symbol in "♥♦", step, shoe_index)


@dataclass(frozen=True)
class Part:
    """Text, or a card (``card`` set, ``text`` empty)."""

    text: str = ""
    card: Face | None = None


Parts = tuple[Part, ...]


def multiplier(text: str | None) -> str:
    """A recorded multiplier (an exact fraction as text, ``"19/20"``) as a person reads it: ``0.95×``.
    A fraction with no finite decimal form keeps its exact form beside the rounded one."""
    if text is None:
        return ""
    value = Fraction(text)
    for digits in range(0, 19):
        scaled = value * 10**digits
        if scaled.denominator == 1:
            whole = abs(scaled.numerator)
            sign = "-" if value < 0 else ""
            body = str(whole).rjust(digits + 1, "0")
            number = body if digits == 0 else f"{body[:-digits]}.{body[-digits:]}"
            return f"{sign}{number}×"
    return f"≈{float(value):.4f}× ({value})"


def money(amount: int | None, currency: str = DEFAULT, signed: bool = False) -> str:
    """An amount of minor units as a person reads it, in its currency (``pokdeng_service.money``, the one
    place): ``THB 1,000.00``; ``signed``: ``+THB 200.00`` for a gain."""
    return format_money(amount, currency, signed=signed)


def utc(stored: str) -> str:
    """A stored time (``2026-03-14T15:09:26.587725+00:00``) in full, as UTC, without re-computing it."""
    date, _, rest = stored.partition("T")
    clock = rest.removesuffix("+00:00")
    return f"{date} {clock} UTC" if clock != rest else stored


def _who(seat: int, holders: dict[int, str | None], banker: str | None) -> str:
    if seat == 0:
        return f"the banker ({banker})" if banker else "the banker (the house)"
    holder = holders.get(seat)
    return f"seat {seat} ({holder})" if holder else f"position {seat}"


class Describer:
    """Words for each event, knowing the seats and the banker of the round."""

    def __init__(
        self, holders: dict[int, str | None], banker: str | None, card: Callable[[str], Face], currency: str = DEFAULT
    ) -> None:
        self.holders = holders
        self.banker = banker
        self.card = card  # a card text as drawn at this point (its step and place in the shoe)
        self.currency = currency  # the round's (round_opened.currency)

    def money(self, amount: int | None, signed: bool = False) -> str:
        return money(amount, self.currency, signed)

    def who(self, seat: int) -> str:
        return _who(seat, self.holders, self.banker)

    def cards(self, texts: Sequence[str]) -> list[Part]:
        parts: list[Part] = []
        for text in texts:
            parts.append(Part(card=self.card(text)))
        return parts

    def __call__(self, kind: str, d: dict[str, Any], dealt: Sequence[Face] = ()) -> Parts:
        t = Part
        if kind == "round_opened":
            seats = ", ".join(f"{s} {h}" if h else str(s) for s, h in d["seats"])
            return (
                t(
                    f"round {d['round_no']} of table {d['table_id']} opens under {d['profile_name']} "
                    f"v{d['profile_version']}: seats {seats}; banker {d['banker_player'] or 'the house'}; "
                    f"stakes {self.money(d['min_stake'])} to {self.money(d['max_stake'])}"
                ),
            )
        if kind == "contributions_opened":
            return (t(f"the client seed will be derived at the deal from the contributions ({d['rule']})"),)
        if kind == "shuffle_committed":
            extra = f", client seed {d['client_seed']!r}" if d["client_seed"] else ""
            return (t(f"the server commits to its seed: SHA-256 {d['commitment']}{extra}, nonce {d['nonce']}"),)
        if kind == "client_seed_contributed":
            return (t(f"{d['contributor'] or 'the platform'} contributes the client seed {d['client_seed']!r}"),)
        if kind == "client_seed_fixed":
            count = len(d["contributions"])
            return (t(f"client seed fixed: {d['client_seed']}, derived from {count} contribution(s)"),)
        if kind == "bet_placed":
            banker = f"; the banker reserves {self.money(d['banker_reserved'])}" if d["banker_reserved"] else ""
            return (
                t(
                    f"{d['player']} stakes {self.money(d['stake'])} on {self.who(d['seat'])} "
                    f"(reserves {self.money(d['reserved'])}{banker})"
                ),
            )
        if kind == "cards_dealt":
            parts: list[Part] = [t("the deal, one card at a time: ")]
            for i, ((seat, _text), shown) in enumerate(zip(d["cards"], dealt, strict=True)):
                parts += [t(("; " if i else "") + f"{self.who(seat)} "), t(card=shown)]
            if d["banker_up_card"]:
                parts += [t("; the banker's first card is face up: "), *self.cards([d["banker_up_card"]])]
            return tuple(parts)
        if kind == "pok_declared":
            return (t(f"{self.who(d['seat'])} shows {d['label']} ({d['taem']} points): "), *self.cards(d["cards"]))
        if kind == "side_bet_window_opened":
            return (t("the banker's up card "), *self.cards([d["up_card"]]), t(" opens the side bets"))
        if kind == "side_bet_placed":
            return (t(f"{d['player']} places a side bet of {self.money(d['stake'])} on {self.who(d['seat'])}"),)
        if kind == "side_bets_settled":
            results = ", ".join(f"{p} {self.money(n, True)}" for _s, p, _st, n in d["results"]) or "none placed"
            natural = "has a natural" if d["natural"] else "has no natural"
            return (t(f"side bets closed: the banker {natural}; {results}"),)
        if kind == "turn_timed_out":
            return (t(f"{self.who(d['seat'])} did not act in time: the automatic action is to {d['action']}"),)
        if kind == "card_drawn":
            why = {"auto": " (the draw rule)", "timeout": " (time out)"}.get(d["reason"], "")
            return (t(f"{self.who(d['seat'])} draws "), *self.cards([d["card"]]), t(why))
        if kind == "player_stood":
            why = {"auto": " (the draw rule)", "timeout": " (time out)"}.get(d["reason"], "")
            return (t(f"{self.who(d['seat'])} stays{why}"),)
        if kind == "hands_revealed":
            parts = [t("the banker shows chosen hands first: " if d["selective"] else "showdown: ")]
            for i, (seat, cards) in enumerate(d["hands"]):
                parts += [t(("; " if i else "") + f"{self.who(seat)} "), *self.cards(cards)]
            return tuple(parts)
        if kind == "bet_settled":
            outcome = {"player_wins": "wins", "banker_wins": "loses", "tie": "ties"}.get(d["outcome"], d["outcome"])
            paid = f" at {multiplier(d['multiplier'])}" if d["outcome"] != "tie" else ""
            fee = f", commission {self.money(d['commission'])}" if d["commission"] else ""
            return (
                t(
                    f"{d['player']} on seat {d['seat']} {outcome}{paid}: {d['hand']} against the banker's "
                    f"{d['banker_hand']}; stake {self.money(d['stake'])}, net {self.money(d['net'], True)}{fee}"
                ),
            )
        if kind == "round_settled":
            nets = ", ".join(f"{p} {self.money(n, True)}" for p, _r, n in d["wallets"])
            return (
                t(
                    f"settled: {nets}; house {self.money(d['house_net'], True)}; "
                    f"commission {self.money(d['commission'])}; the books balance to zero"
                ),
            )
        if kind == "round_voided":
            by = d.get("by") or "an operator (not recorded)"
            return (t(f"voided by {by}: {d['reason']!r}; every reservation released, no money moved"),)
        if kind == "seed_revealed":
            return (t(f"the server seed is revealed: {d['server_seed']}"),)
        if kind == "round_closed":
            return (t(f"the round closes ({d['outcome']})"),)
        return (t(kind),)


def senders(facts: Sequence[dict[str, Any]]) -> list[str]:
    """Each event's command's recorded sender, in the events' order: the first ``by`` that is not empty
    among the consecutive events of its command (one ``command_id``), or ``""``. So the opening's
    commitment has ``round_opened.by``, the deal's fixed client seed ``cards_dealt.by``, a stake's own
    contribution ``bet_placed.by`` (docs/events.md, "Who sent a command"); rounds recorded before these
    fields, and a player's own decisions, name none."""
    out: list[str] = []
    for _command, events in groupby(facts, key=lambda f: f["command_id"]):
        group = list(events)
        out += [next((str(f["data"]["by"]) for f in group if f["data"].get("by")), "")] * len(group)
    return out


def _for(by: str, whom: str) -> str:
    """A decision for ``whom``, sent by ``by`` when the record names another sender."""
    return f"{by} for {whom}" if by else whom


def actor(
    kind: str,
    d: dict[str, Any],
    holders: dict[int, str | None],
    banker: str | None,
    timed_out: str,
    sender: str = "",
) -> str:
    """Who made the event happen, as the record says: a player (``<sender> for <player>`` when someone
    else sent its decision: the event's ``by``), an operator's command (with its sender where the record
    names it: ``sender``, from ``senders``, for the events of a start or a deal, and for a contribution
    made with a stake or the opening), or the engine on its own."""
    by = str(d.get("by") or "")
    if kind in ("bet_placed", "side_bet_placed"):
        return _for(by, str(d["player"]))
    if kind == "client_seed_contributed":  # (made with a stake or the opening: their sender's)
        return _for(by or sender, str(d["contributor"] or "the platform"))
    if kind in ("round_voided", "turn_timed_out", "side_bets_settled"):
        return by or "operator (not recorded)"
    if kind in ("round_opened", "contributions_opened", "shuffle_committed"):
        return sender or "operator (start round)"
    if kind in ("client_seed_fixed", "cards_dealt"):
        return sender or "operator (deal)"
    if kind in ("card_drawn", "player_stood"):
        if d["reason"] == "auto":
            return "the draw rule"
        if d["reason"] == "timeout":
            return timed_out or "operator (time out)"
        seat = d["seat"]
        return _for(by, (banker or "the house") if seat == 0 else str(holders.get(seat) or f"position {seat}"))
    if kind == "hands_revealed" and d["selective"]:
        return _for(by, banker or "the house")
    return "the engine"
