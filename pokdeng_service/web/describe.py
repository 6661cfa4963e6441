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
        """What an event of ``kind`` (its data ``d``; the cards it dealt, ``dealt``) says, in words and cards."""
        describe = _DESCRIPTIONS.get(kind)
        return (Part(kind),) if describe is None else describe(self, d, dealt)

    def _round_opened(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        seats = ", ".join(f"{s} {h}" if h else str(s) for s, h in d["seats"])
        return (
            Part(
                f"round {d['round_no']} of table {d['table_id']} opens under {d['profile_name']} "
                f"v{d['profile_version']}: seats {seats}; banker {d['banker_player'] or 'the house'}; "
                f"stakes {self.money(d['min_stake'])} to {self.money(d['max_stake'])}"
            ),
        )

    def _contributions_opened(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"the client seed will be derived at the deal from the contributions ({d['rule']})"),)

    def _shuffle_committed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        extra = f", client seed {d['client_seed']!r}" if d["client_seed"] else ""
        return (Part(f"the server commits to its seed: SHA-256 {d['commitment']}{extra}, nonce {d['nonce']}"),)

    def _client_seed_contributed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"{d['contributor'] or 'the platform'} contributes the client seed {d['client_seed']!r}"),)

    def _client_seed_fixed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        count = len(d["contributions"])
        return (Part(f"client seed fixed: {d['client_seed']}, derived from {count} contribution(s)"),)

    def _bet_placed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        banker = f"; the banker reserves {self.money(d['banker_reserved'])}" if d["banker_reserved"] else ""
        return (
            Part(
                f"{d['player']} stakes {self.money(d['stake'])} on {self.who(d['seat'])} "
                f"(reserves {self.money(d['reserved'])}{banker})"
            ),
        )

    def _cards_dealt(self, d: dict[str, Any], dealt: Sequence[Face]) -> Parts:
        parts: list[Part] = [Part("the deal, one card at a time: ")]
        for i, ((seat, _text), shown) in enumerate(zip(d["cards"], dealt, strict=True)):
            parts += [Part(("; " if i else "") + f"{self.who(seat)} "), Part(card=shown)]
        if d["banker_up_card"]:
            parts += [Part("; the banker's first card is face up: "), *self.cards([d["banker_up_card"]])]
        return tuple(parts)

    def _pok_declared(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"{self.who(d['seat'])} shows {d['label']} ({d['taem']} points): "), *self.cards(d["cards"]))

    def _side_bet_window_opened(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part("the banker's up card "), *self.cards([d["up_card"]]), Part(" opens the side bets"))

    def _side_bet_placed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"{d['player']} places a side bet of {self.money(d['stake'])} on {self.who(d['seat'])}"),)

    def _side_bets_settled(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        results = ", ".join(f"{p} {self.money(n, True)}" for _s, p, _st, n in d["results"]) or "none placed"
        natural = "has a natural" if d["natural"] else "has no natural"
        return (Part(f"side bets closed: the banker {natural}; {results}"),)

    def _turn_timed_out(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"{self.who(d['seat'])} did not act in time: the automatic action is to {d['action']}"),)

    def _card_drawn(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        why = {"auto": " (the draw rule)", "timeout": " (time out)"}.get(d["reason"], "")
        return (Part(f"{self.who(d['seat'])} draws "), *self.cards([d["card"]]), Part(why))

    def _player_stood(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        why = {"auto": " (the draw rule)", "timeout": " (time out)"}.get(d["reason"], "")
        return (Part(f"{self.who(d['seat'])} stays{why}"),)

    def _hands_revealed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        parts = [Part("the banker shows chosen hands first: " if d["selective"] else "showdown: ")]
        for i, (seat, cards) in enumerate(d["hands"]):
            parts += [Part(("; " if i else "") + f"{self.who(seat)} "), *self.cards(cards)]
        return tuple(parts)

    def _bet_settled(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        outcome = {"player_wins": "wins", "banker_wins": "loses", "tie": "ties"}.get(d["outcome"], d["outcome"])
        paid = f" at {multiplier(d['multiplier'])}" if d["outcome"] != "tie" else ""
        fee = f", commission {self.money(d['commission'])}" if d["commission"] else ""
        return (
            Part(
                f"{d['player']} on seat {d['seat']} {outcome}{paid}: {d['hand']} against the banker's "
                f"{d['banker_hand']}; stake {self.money(d['stake'])}, net {self.money(d['net'], True)}{fee}"
            ),
        )

    def _round_settled(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        nets = ", ".join(f"{p} {self.money(n, True)}" for p, _r, n in d["wallets"])
        return (
            Part(
                f"settled: {nets}; house {self.money(d['house_net'], True)}; "
                f"commission {self.money(d['commission'])}; the books balance to zero"
            ),
        )

    def _round_voided(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        by = d.get("by") or "an operator (not recorded)"
        return (Part(f"voided by {by}: {d['reason']!r}; every reservation released, no money moved"),)

    def _seed_revealed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"the server seed is revealed: {d['server_seed']}"),)

    def _round_closed(self, d: dict[str, Any], _dealt: Sequence[Face]) -> Parts:
        return (Part(f"the round closes ({d['outcome']})"),)


_DESCRIPTIONS: dict[str, Callable[[Describer, dict[str, Any], Sequence[Face]], Parts]] = {
    "round_opened": Describer._round_opened,
    "contributions_opened": Describer._contributions_opened,
    "shuffle_committed": Describer._shuffle_committed,
    "client_seed_contributed": Describer._client_seed_contributed,
    "client_seed_fixed": Describer._client_seed_fixed,
    "bet_placed": Describer._bet_placed,
    "cards_dealt": Describer._cards_dealt,
    "pok_declared": Describer._pok_declared,
    "side_bet_window_opened": Describer._side_bet_window_opened,
    "side_bet_placed": Describer._side_bet_placed,
    "side_bets_settled": Describer._side_bets_settled,
    "turn_timed_out": Describer._turn_timed_out,
    "card_drawn": Describer._card_drawn,
    "player_stood": Describer._player_stood,
    "hands_revealed": Describer._hands_revealed,
    "bet_settled": Describer._bet_settled,
    "round_settled": Describer._round_settled,
    "round_voided": Describer._round_voided,
    "seed_revealed": Describer._seed_revealed,
    "round_closed": Describer._round_closed,
}
"""How each kind of event is said (an unknown kind: its name)."""


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
