"""The answer the dispute page leads with: each stake in one line (its seat's cards, points, the hand's class
and why it won or lost: "pok deng 9, two of a kind, pays 2×, beats the banker's 5"), the commission where
one was taken, and a short legend: the game's words and this profile's payouts (docs/rules.md)."""

from __future__ import annotations

from dataclasses import dataclass

from pokdeng_core.cards import parse_card
from pokdeng_service.web.describe import Face, money
from pokdeng_service.web.model import Bet, Page, Seat

FACES = {"J", "Q", "K"}

GLOSSARY: tuple[tuple[str, str], ...] = (
    ("taem", "a hand's points: the last digit of its cards' sum (A 1, 2-9 their number, 10 J Q K 0); 9 is best"),
    ("pok", "8 or 9 points in the first two cards: shown at once, never draws, the best kind of hand"),
    (
        "deng",
        "what a win is multiplied by: two cards of one suit or one rank (song deng) 2×, three of one suit "
        "(sam deng) 3×; a pok deng is a pok with deng 2",
    ),
    ("sam lueang", "three face cards (J, Q, K) that are no tong and no straight"),
    ("tong", "three cards of one rank (7♠ 7♥ 7♣)"),
)

PAYOUTS: dict[str, tuple[str, ...]] = {
    "classic": (
        "hands compare by type (pok, tong, sam lueang, normal), then taem, then deng; all equal: a tie, stake back",
        "the winner is paid stake × its deng (pok deng 2×, tong 5×, sam lueang 3×, sam deng 3×, song deng 2×); "
        "when only the deng decided, stake × the difference of the dengs; tong against sam lueang pays 2×",
        "no commission",
    ),
    "ante": (
        "each wager is half ante, half bet; nobody draws; 9 > 8 > the specials (AK flush, special pair, "
        "face cards, 10 and face card, zero flush) > 7 … 0",
        "player higher: the ante wins 1×, the bet wins 1× on a special hand (against a banker's plain 0 or 6 "
        "only a winning 8 or 9 flush or pair); banker higher: the ante is lost, the bet only to a special hand",
        "equal values: both returned; no commission",
    ),
    "room": (
        "ranks: pok deng 2× / pok 1×, tong 5×, straight flush 5×, straight 3×, sam lueang 3×, "
        "sam deng 3× / song deng 2× / taem 1×; within pok and normal hands only the taem counts",
        "the winning side collects stake × its hand's multiplier",
        "commission 3% (rounded up) of a winning player's gross, and 3% of the banker's gain over the round",
    ),
    "kingmaker": (
        "ranks: pok deng 2× / pok 0.95×, tong 5×, straight flush 5×, straight 3×, sam lueang 3×, "
        "sam deng 3× / song deng 2× / taem 0.95×",
        "a winning player receives floor(stake × its multiplier); a losing one pays stake × max(1, the "
        "banker's multiplier)",
        "side bet on the banker's 8 or 9 up card: a banker's natural pays floor(1.2 × side stake), else it is "
        "lost; no commission",
    ),
}


@dataclass(frozen=True)
class Line:
    """One stake (or the banker's hand) in a line: who, the cards, and the sentence after them."""

    who: str
    cards: tuple[Face, ...]
    text: str
    outcome: str = ""  # "player_wins", "banker_wins", "tie"; "" for the banker's line
    net: str = ""  # the stake's net as a person reads it ("+THB 200.00")
    commission: str = ""  # the commission taken on it, where one was
    seat: int = 0  # 0: the banker
    player: str = ""  # the stake's wallet


def card_class(texts: list[str]) -> str:
    """The cards' class in words: "two of a kind", "two of a suit", "three of a kind", "three face cards",
    "three of a suit", or "mixed suits"."""
    cards = [parse_card(t) for t in texts if t]
    if len(cards) < 2:
        return ""
    ranks = {c.rank.text for c in cards}
    suits = {c.suit.symbol for c in cards}
    count = "two" if len(cards) == 2 else "three"
    if len(ranks) == 1:
        return f"{count} of a kind"
    if len(cards) == 3 and ranks <= FACES:
        return "three face cards"
    if len(suits) == 1:
        return f"{count} of a suit"
    return "mixed suits"


def hand_words(label: str, points: int | None) -> str:
    """The hand's kind and its points: ``pok deng`` and 9 → ``pok deng 9``, a straight of 6 4 5 → ``straight 5``
    (two hands of one kind compare their points next); a plain hand (``taem``, ``normal``) → ``taem 5``."""
    shown = "" if points is None else str(points)
    if not label or label.isdigit() or label in ("taem", "normal"):
        return f"taem {shown}".strip()
    return f"{label} {shown}".strip()


def lines(page: Page) -> list[Line]:
    """The banker's hand, then every stake in seat order, as the page leads with them (settled bets only)."""
    seats = {s.seat: s for s in page.seats}
    banker = seats[0]
    banker_hand = _hand(banker, banker.hand)
    out: list[Line] = []
    if banker.cards:
        fee = page.banker_net.get("Commission", "")  # (room: the banker's own, on its gain over the round)
        fee = "" if fee in ("", money(0, page.currency)) else fee
        text = ", ".join(p for p in (banker_hand, card_class(_texts(banker))) if p)
        out.append(Line(banker.title, tuple(banker.cards), text, commission=fee))
    for seat in page.seats[1:]:
        for bet in seat.bets:
            if bet.outcome:
                out.append(_stake_line(page, seat, bet, _hand(banker, bet.banker_hand)))
    return out


def _texts(seat: Seat) -> list[str]:
    return [c.text for c in seat.cards]


def _hand(seat: Seat, label: str) -> str:
    return hand_words(label, seat.points)


def _stake_line(page: Page, seat: Seat, bet: Bet, banker: str) -> Line:
    hand = _hand(seat, bet.hand)
    kind = card_class(_texts(seat))
    if bet.outcome == "player_wins":
        why = f"pays {bet.multiplier}, beats the banker's {banker}"
    elif bet.outcome == "banker_wins":
        why = f"loses {bet.multiplier} to the banker's {banker}"
    else:
        why = f"ties the banker's {banker}: the stake comes back"
    fee = money(bet.commission, page.currency) if bet.commission else ""
    text = ", ".join(p for p in (hand, kind, why) if p)
    who = f"{seat.title}" + (f" (stake of {bet.player})" if bet.player != seat.holder else "")
    net = money(bet.net, page.currency, True)
    return Line(who, tuple(seat.cards), text, bet.outcome, net, fee, seat.seat, bet.player)


def legend(profile: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The game's words, and the payouts of ``profile`` (its name: "kingmaker v1 ..." → kingmaker)."""
    return GLOSSARY, PAYOUTS.get(profile.split()[0], ())
