"""What the dispute page shows, built from a round's events (and its bundle once the round is closed).

The page is the table as a person would see it (the banker and every seat: card faces, points,
hand, multiplier, stakes, side bets, commission, net, balances before and after), a headline
(settled, voided and by whom, or in play), the timeline step by step, the seeds and the chain.

Steps: every event is one step, except the deal, which is one step a card, in the order dealt. A
card, a hand's value and a payout carry the step at which they appear, so the page's step-through
control shows the table as it was at any step. Nothing here is markup: the template escapes it all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pokdeng_core.cards import parse_card
from pokdeng_core.currencies import DEFAULT, currency_of
from pokdeng_core.hands import taem
from pokdeng_service.web.describe import Describer, Face, Parts, actor, face, multiplier, senders, utc
from pokdeng_service.web.describe import money as _money

ROUND_EVENTS_FROM = 2  # position 1 is the stream's creation row, not a round event


@dataclass
class Bet:
    player: str
    stake: int
    reserved: int
    step: int
    side_stake: int = 0
    side_net: int | None = None
    side_step: int = 0
    outcome: str = ""
    multiplier: str = ""  # as a person reads it, "0.95×"
    exact: str = ""  # as recorded, "19/20"
    gross: int = 0
    commission: int = 0
    net: int | None = None
    hand: str = ""
    banker_hand: str = ""
    settled_step: int = 0

    @property
    def result(self) -> str:
        return {"player_wins": "wins", "banker_wins": "loses", "tie": "tie"}.get(self.outcome, "")

    @property
    def verb(self) -> str:
        return {"player_wins": "wins", "banker_wins": "loses", "tie": "ties"}.get(self.outcome, "")


@dataclass
class Seat:
    seat: int
    holder: str | None
    title: str
    cards: list[Face] = field(default_factory=list)
    bets: list[Bet] = field(default_factory=list)
    hand: str = ""  # the hand's name once shown ("pok deng", "taem")
    shown_step: int = 0  # the step at which its hand is known (a pok, a reveal)

    @property
    def points(self) -> int | None:
        if not self.cards or not all(c.text for c in self.cards):  # (none yet, or one face down)
            return None
        return taem([parse_card(c.text) for c in self.cards])


@dataclass(frozen=True)
class Wallet:
    wallet: str
    role: str  # "player", "banker"
    reserved: int
    net: int | None
    before: int | None
    after: int | None


@dataclass(frozen=True)
class Step:
    first: int  # the step number (a deal: its first card's)
    last: int
    position: int  # the event's position in the round's stream
    kind: str
    time: str  # full UTC
    timestamp: str  # as stored (ISO 8601)
    who: str
    parts: Parts
    command_id: str
    digest: str


@dataclass(frozen=True)
class Headline:
    state: str  # "settled", "voided", "open"
    title: str
    detail: str
    by: str = ""
    reason: str = ""


@dataclass
class Page:
    round_id: str
    table_id: str
    round_no: int
    profile: str
    engine: str
    banker: str
    stakes: str
    opened: str
    closed: str
    headline: Headline
    seats: list[Seat]
    wallets: list[Wallet]
    house: dict[str, str]
    steps: list[Step]
    shuffle: dict[str, Any]
    shoe: list[Face]
    chain: dict[str, str]
    anchor: dict[str, str] | None
    total_steps: int
    dealt: int  # cards of the shoe dealt and drawn
    settled_step: int  # the step of round_settled (0: not settled)
    banker_net: dict[str, str]  # the banker's side of the settlement, as the banker's seat shows it
    currency: str = "THB"  # the round's ISO 4217 code (round_opened.currency): every amount is in it


def _event_dicts(events: Sequence[Any]) -> list[dict[str, Any]]:
    """The round's events (position 2 on) as plain dicts, from bundle entries or ``RecordedEvent``s."""
    found = []
    for event in events:
        e = event if isinstance(event, dict) else event._asdict()  # (store.facts.RecordedEvent: a named tuple)
        if e["position"] >= ROUND_EVENTS_FROM and e.get("digest"):
            found.append(e)
    return found


def build(events: Sequence[Any], bundle: dict[str, Any] | None = None, phase: str = "") -> Page:
    """The page of a round: ``events`` are its stored events (a bundle's ``events`` or the round view's);
    ``bundle`` gives the balances, the shoe and the anchor of a closed round."""
    facts = _event_dicts(bundle["events"] if bundle is not None else events)
    if not facts or facts[0]["kind"] != "round_opened":
        raise ValueError("a round's record starts with round_opened")
    opened = facts[0]["data"]
    shoe_texts: list[str] = list(bundle["shuffle"]["deck_order"]) if bundle is not None else []
    currency = currency_of(opened)
    walk = _Walk(_seats(opened), len(shoe_texts))
    steps = _steps(facts, walk, opened, currency)
    return _page(facts, walk, steps, shoe_texts, bundle, phase, currency)


def _seats(opened: dict[str, Any]) -> dict[int, Seat]:
    """The banker's seat (0) and the table's seats as the round opened."""
    banker: str | None = opened["banker_player"]
    ante = opened["profile_name"] == "ante"
    seats: dict[int, Seat] = {0: Seat(0, banker, f"Banker · {banker}" if banker else "Banker · the house")}
    for seat, holder in opened["seats"]:
        title = f"Seat {seat} · {holder}" if holder else (f"Position {seat}" if ante else f"Seat {seat} · empty")
        seats[seat] = Seat(seat, holder, title)
    return seats


@dataclass
class _Walk:
    """The round as its events are walked: its seats, the last step so far (a card dealt is a step of its own,
    any other event one), the shoe's cards used, and what settled or voided it."""

    seats: dict[int, Seat]
    shoe_size: int
    step: int = 0
    used: int = 0
    settlement: dict[str, Any] | None = None
    voided: dict[str, Any] | None = None
    settled_step: int = 0

    def card(self, text: str) -> Face:
        """The next card of the shoe, at the current step (its place in the shoe, if the shoe is known)."""
        found = face(text, self.step, self.used if self.used < self.shoe_size else None)
        self.used += 1
        return found

    def deal(self, cards: Sequence[tuple[int, str]]) -> list[Face]:
        """The cards dealt, a step each, each to its seat."""
        dealt = []
        for seat, text in cards:
            self.step += 1
            dealt.append(self.card(text))
            self.seats.setdefault(seat, Seat(seat, None, f"Position {seat}")).cards.append(dealt[-1])
        return dealt


def _steps(facts: list[dict[str, Any]], walk: _Walk, opened: dict[str, Any], currency: str) -> list[Step]:
    """Each event as a step of the page (who, what, its record), the seats and the settlement folded on the way."""
    holders: dict[int, str | None] = {s: h for s, h in opened["seats"]}
    banker: str | None = opened["banker_player"]
    current = {"step": 0}

    def card_at(text: str) -> Face:
        return face(text, current["step"])

    describe = Describer(holders, banker, card_at, currency)
    steps: list[Step] = []
    timed_out = ""
    sent_by = senders(facts)
    for index, event in enumerate(facts):
        kind, d = event["kind"], event["data"]
        first = walk.step + 1
        dealt: list[Face] = []
        if kind == "cards_dealt":
            dealt = walk.deal(d["cards"])
        else:
            walk.step += 1
        current["step"] = first
        fold = _FOLDS.get(kind)
        if fold is not None:
            fold(walk, d)
        who = actor(kind, d, holders, banker, timed_out, sent_by[index])
        timed_out = str(d.get("by") or "operator (time out)") if kind == "turn_timed_out" else ""
        steps.append(
            Step(
                first,
                walk.step,
                event["position"],
                kind,
                utc(event["timestamp"]),
                event["timestamp"],
                who,
                describe(kind, d, dealt),
                event["command_id"],
                event["digest"],
            )
        )
    return steps


def _bet_placed(walk: _Walk, d: dict[str, Any]) -> None:
    walk.seats[d["seat"]].bets.append(Bet(d["player"], d["stake"], d["reserved"], walk.step))


def _side_bet_placed(walk: _Walk, d: dict[str, Any]) -> None:
    bet = _bet(walk.seats, d["seat"], d["player"])
    if bet is not None:
        bet.side_stake, bet.side_step = d["stake"], walk.step


def _side_bets_settled(walk: _Walk, d: dict[str, Any]) -> None:
    for seat, player, _stake, net in d["results"]:
        bet = _bet(walk.seats, seat, player)
        if bet is not None:
            bet.side_net, bet.side_step = net, walk.step


def _pok_declared(walk: _Walk, d: dict[str, Any]) -> None:
    walk.seats[d["seat"]].hand, walk.seats[d["seat"]].shown_step = d["label"], walk.step


def _hands_revealed(walk: _Walk, d: dict[str, Any]) -> None:
    for seat, _cards in d["hands"]:
        walk.seats[seat].shown_step = walk.seats[seat].shown_step or walk.step


def _round_settled(walk: _Walk, d: dict[str, Any]) -> None:
    walk.settlement, walk.settled_step = d, walk.step


def _round_voided(walk: _Walk, d: dict[str, Any]) -> None:
    walk.voided = d


_FOLDS: dict[str, Callable[[_Walk, dict[str, Any]], None]] = {
    "card_drawn": lambda walk, d: walk.seats[d["seat"]].cards.append(walk.card(d["card"])),
    "bet_placed": _bet_placed,
    "side_bet_placed": _side_bet_placed,
    "side_bets_settled": _side_bets_settled,
    "pok_declared": _pok_declared,
    "hands_revealed": _hands_revealed,
    "bet_settled": lambda walk, d: _settle(walk.seats, d, walk.step),
    "round_settled": _round_settled,
    "round_voided": _round_voided,
}
"""What an event changes of the page's seats and settlement, by its kind (the others change none)."""


def _page(
    facts: list[dict[str, Any]],
    walk: _Walk,
    steps: list[Step],
    shoe_texts: list[str],
    bundle: dict[str, Any] | None,
    phase: str,
    currency: str,
) -> Page:
    """The page from the walked round."""
    opened = facts[0]["data"]
    banker: str | None = opened["banker_player"]
    settlement, voided = walk.settlement, walk.voided
    closed = facts[-1]["kind"] == "round_closed"
    options = ", ".join(name for name, on in opened["profile_options"] if on)
    stakes = f"{_money(opened['min_stake'], currency, False)} to {_money(opened['max_stake'], currency, False)}"
    return Page(
        round_id=opened["round_id"],
        table_id=opened["table_id"],
        round_no=opened["round_no"],
        profile=f"{opened['profile_name']} v{opened['profile_version']}" + (f" ({options})" if options else ""),
        engine=str(opened.get("engine_version", "")),
        banker=f"{banker} (a player banks)" if banker else "the house",
        stakes=stakes,
        opened=utc(facts[0]["timestamp"]),
        closed=utc(facts[-1]["timestamp"]) if closed else "",
        headline=_headline(facts, settlement, voided, phase, currency),
        seats=[walk.seats[k] for k in sorted(walk.seats)],  # the banker first, then the seats in order
        wallets=_wallets(settlement, voided, banker, bundle),
        house=_house(settlement, banker, currency),
        steps=steps,
        shuffle=_shuffle(facts, bundle),
        shoe=[face(text, 0, i) for i, text in enumerate(shoe_texts)],
        chain=_chain(facts, bundle),
        anchor=_anchor(bundle),
        total_steps=walk.step,
        dealt=walk.used,
        settled_step=walk.settled_step,
        banker_net=_banker_net(settlement, banker, currency),
        currency=currency,
    )


def _bet(seats: dict[int, Seat], seat: int, player: str) -> Bet | None:
    return next((b for b in seats[seat].bets if b.player == player), None) if seat in seats else None


def _settle(seats: dict[int, Seat], d: dict[str, Any], step: int) -> None:
    bet = _bet(seats, d["seat"], d["player"])
    if bet is None:
        return
    bet.outcome, bet.exact, bet.multiplier = d["outcome"], d["multiplier"], multiplier(d["multiplier"])
    bet.gross, bet.commission, bet.net, bet.settled_step = d["gross"], d["commission"], d["net"], step
    bet.hand, bet.banker_hand = d["hand"], d["banker_hand"]
    seats[d["seat"]].hand = d["hand"]
    seats[0].hand = d["banker_hand"]


def _headline(
    facts: list[dict[str, Any]],
    settlement: dict[str, Any] | None,
    voided: dict[str, Any] | None,
    phase: str,
    currency: str = DEFAULT,
) -> Headline:
    def money(amount: int, signed: bool = False) -> str:
        return _money(amount, currency, signed)

    closed = facts[-1]["kind"] == "round_closed"
    when = utc(facts[-1]["timestamp"])
    if voided is not None:
        by = str(voided.get("by") or "")
        released = sum(r for _p, r in voided["wallets"])
        return Headline(
            "voided",
            "VOIDED",
            f"voided by {by or 'an operator (the record of this round does not name who)'} at {when}: "
            f"{voided['reason']!r}. Every reservation ({money(released)} in all) was released; no money moved.",
            by,
            shown_text(str(voided["reason"])),
        )
    if settlement is not None and closed:
        players = sum(n for _p, _r, n in settlement["wallets"])
        return Headline(
            "settled",
            "SETTLED",
            f"settled at {when}: wallets {money(players, True)}, house {money(settlement['house_net'], True)}, "
            f"commission {money(settlement['commission'])}; the books balance to zero.",
        )
    return Headline("open", "IN PLAY", f"the round is still in play ({phase or 'open'}): its server seed is secret")


def _wallets(
    settlement: dict[str, Any] | None, voided: dict[str, Any] | None, banker: str | None, bundle: dict[str, Any] | None
) -> list[Wallet]:
    balances = {b["wallet"]: b for b in (bundle or {}).get("balances", ())}
    rows = []
    if settlement is not None:
        for player, reserved, net in settlement["wallets"]:
            known = balances.get(player, {})
            role = "banker" if player == banker else "player"
            rows.append(Wallet(player, role, reserved, net, known.get("before"), known.get("after")))
    elif voided is not None:
        for player, reserved in voided["wallets"]:
            rows.append(Wallet(player, "banker" if player == banker else "player", reserved, 0, None, None))
    return rows


def _banker_net(settlement: dict[str, Any] | None, banker: str | None, currency: str = DEFAULT) -> dict[str, str]:
    """What the round gave the banker: its net before commission, the commission on it, its net."""

    def money(amount: int, signed: bool = False) -> str:
        return _money(amount, currency, signed)

    if settlement is None:
        return {}
    before = settlement["banker_net_before_commission"]
    owed = settlement["banker_commission"]
    return {
        "Net before commission": money(before, True),
        "Commission": money(owed),
        "Net": money(before - owed, True) if banker else money(settlement["house_net"], True) + " (house)",
    }


def _house(settlement: dict[str, Any] | None, banker: str | None, currency: str = DEFAULT) -> dict[str, str]:
    def money(amount: int, signed: bool = False) -> str:
        return _money(amount, currency, signed)

    if settlement is None:
        return {}
    return {
        "banker before commission": money(settlement["banker_net_before_commission"], True),
        "banker's commission": money(settlement["banker_commission"]),
        "commission (all)": money(settlement["commission"]),
        "house": money(settlement["house_net"], True) + ("" if banker is None else " (a player banks)"),
    }


def shown_text(text: str) -> str:
    """Free text a player chose (a client seed is any text: docs/shuffle.md) as the page shows it: as it is
    when every character prints, else quoted with its escapes (``'lucky\\u202e...'``), as the timeline
    does, so that a bidi override or a control character cannot reorder or hide what a person reads."""
    return text if text.isprintable() else repr(text)


def _shuffle(facts: list[dict[str, Any]], bundle: dict[str, Any] | None) -> dict[str, Any]:
    committed: dict[str, Any] = next((e["data"] for e in facts if e["kind"] == "shuffle_committed"), {})
    fixed: dict[str, Any] | None = next((e["data"] for e in facts if e["kind"] == "client_seed_fixed"), None)
    revealed: str = next((e["data"]["server_seed"] for e in facts if e["kind"] == "seed_revealed"), "")
    shown: dict[str, Any] = (bundle or {}).get("shuffle", {})
    return {
        "algorithm": committed.get("algorithm", ""),
        "commitment": committed.get("commitment", ""),
        "server_seed": revealed or "(secret until the round closes)",
        "client_seed": shown_text(fixed["client_seed"] if fixed else committed.get("client_seed", "")),
        "rule": fixed["rule"] if fixed else "",
        "contributions": [(c or "the platform", shown_text(s)) for c, s in (fixed["contributions"] if fixed else [])],
        "nonce": committed.get("nonce", ""),
        "decks": shown.get("decks", ""),
        "shoe_size": committed.get("shoe_size", ""),
    }


def _chain(facts: list[dict[str, Any]], bundle: dict[str, Any] | None) -> dict[str, str]:
    chain = (bundle or {}).get("chain") or {}
    return {
        "genesis": str(chain.get("genesis", "")),
        "last": str(facts[-1].get("digest", "")),
        "bundle_digest": str((bundle or {}).get("bundle_digest", "")),
    }


def _anchor(bundle: dict[str, Any] | None) -> dict[str, str] | None:
    log = (bundle or {}).get("log")
    if not log:
        return None
    head = log["head"]
    signed = datetime.fromtimestamp(head["timestamp"] / 1000, tz=UTC)
    return {
        "leaf": f"leaf {log['index']} of {head['tree_size']}",
        "log_id": str(head["log_id"]),
        "key_id": str(head["key_id"]),
        "root": str(head["root_hash"]),
        "signed": signed.strftime("%Y-%m-%d %H:%M:%S.") + f"{head['timestamp'] % 1000:03d} UTC",
    }
