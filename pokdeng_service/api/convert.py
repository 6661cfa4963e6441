"""Views of the application (pokdeng_service.views) to pokdeng.v1 messages, and the enums both ways.

Round details that the view does not carry (options, seats, stake limits, the
shuffle algorithm, the results) are read from the round's own events, so one
read of the round gives one consistent message.

``Visibility`` blanks what a caller may not see yet: a player token reading an
open round sees its own hands, hands that were shown (poks, reveals), the
kingmaker banker's up card, and the number of cards of every hand, not their faces.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pokdeng_core import events as re
from pokdeng_service.api.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.access import participants as participants  # re-exported
from pokdeng_service.application.views import (
    CommandResult,
    Notification,
    RecordedEvent,
    RoundView,
    StatementLine,
    TableView,
    WalletView,
)
from pokdeng_service.audit import Verdict
from pokdeng_service.store.codec import canonical_json

HIDDEN = ""  # a card the caller may not see yet

PROFILE_TO_PB: dict[str, pb.Profile.ValueType] = {
    "classic": pb.PROFILE_CLASSIC,
    "ante": pb.PROFILE_ANTE,
    "room": pb.PROFILE_ROOM,
    "kingmaker": pb.PROFILE_KINGMAKER,
}
PROFILE_FROM_PB: dict[int, str] = {int(v): k for k, v in PROFILE_TO_PB.items()}

PHASE_TO_PB: dict[str, pb.RoundPhase.ValueType] = {
    "new": pb.ROUND_PHASE_NEW,
    "betting": pb.ROUND_PHASE_BETTING,
    "side_bets": pb.ROUND_PHASE_SIDE_BETS,
    "player_turns": pb.ROUND_PHASE_PLAYER_TURNS,
    "banker_turn": pb.ROUND_PHASE_BANKER_TURN,
    "showdown": pb.ROUND_PHASE_SHOWDOWN,
    "settled": pb.ROUND_PHASE_SETTLED,
    "closed": pb.ROUND_PHASE_CLOSED,
}
OVER = frozenset({"settled", "closed"})


# --- wallets -----------------------------------------------------------------------------------


def wallet(view: WalletView) -> pb.Wallet:
    return pb.Wallet(
        wallet_id=view.wallet_id,
        balance=view.balance,
        reserved=view.reserved,
        available=view.available,
        version=view.version,
        reservations=[pb.Reservation(round_id=r.round_id, amount=r.amount) for r in view.reservations],
    )


def statement(wallet_id: str, lines: Sequence[StatementLine], after: int) -> pb.WalletStatement:
    return pb.WalletStatement(
        wallet_id=wallet_id,
        entries=[
            pb.StatementEntry(
                sequence=line.position,
                kind=line.kind,
                amount=line.amount,
                reserved_change=line.reserved_change,
                balance=line.balance_after,
                round_id=line.round_id,
                reference=line.reference,
                recorded_at=line.at,
            )
            for line in lines
        ],
        next_after=lines[-1].position if lines else after,
    )


# --- tables ------------------------------------------------------------------------------------


def table(view: TableView) -> pb.Table:
    return pb.Table(
        table_id=view.table_id,
        profile=PROFILE_TO_PB.get(view.profile, pb.PROFILE_UNSPECIFIED),
        profile_version=view.profile_version,
        options=_options(view.options),
        min_stake=view.min_stake,
        max_stake=view.max_stake,
        seats=view.seat_count,
        dealer=view.dealer or "",
        turn_timeout=view.turn_timeout,
        seated=[pb.Seat(seat=s.seat, player=s.player) for s in view.seats],
        banker=view.banker or "",
        banker_rounds_left=view.banker_rounds_left,
        bids=[pb.BankerBid(player=p, rounds=r, capital=c) for p, r, c in view.bids],
        current_round_id=view.current_round or "",
        round_no=view.round_no,
        house_net=view.house_net,
        commission=view.commission,
        version=view.version,
    )


def _options(options: Mapping[str, Any]) -> pb.TableOptions:
    return pb.TableOptions(straights=bool(options.get("straights")), ace_low=bool(options.get("ace_low")))


# --- events and visibility ---------------------------------------------------------------------


@dataclass(frozen=True)
class Visibility:
    """Which seats' cards a caller may see in a round; ``everything`` for operators, auditors and closed rounds."""

    everything: bool = True
    seats: frozenset[int] = field(default_factory=frozenset)
    banker_up_card: bool = False

    def sees(self, seat: int) -> bool:
        return self.everything or seat in self.seats


EVERYTHING = Visibility()


def visibility_for(player: str | None, view: RoundView) -> Visibility:
    """What ``player`` (None: an operator or auditor) may see of the round now."""
    if player is None or view.phase in OVER:
        return EVERYTHING
    seats = {h.seat for h in view.hands if h.revealed or h.holder == player}  # seat 0's holder: the player-banker
    if view.banker == player:
        seats.add(0)
    for event in view.events:  # hands shown to the table: a pok at once, the banker's reveals
        if event.kind == re.PokDeclared.kind:
            seats.add(int(event.data["seat"]))
        elif event.kind == re.HandsRevealed.kind:
            seats.update(int(s) for s, _cards in event.data["hands"])
    up_card = any(e.kind == re.CardsDealt.kind and e.data.get("banker_up_card") for e in view.events)
    return Visibility(everything=False, seats=frozenset(seats), banker_up_card=up_card)


def _redacted(event: RecordedEvent, seen: Visibility) -> dict[str, Any] | None:
    """The event's payload with hidden cards blanked, or None when nothing needs blanking."""
    if seen.everything:
        return None
    if event.kind == re.CardsDealt.kind:
        cards = event.data["cards"]
        if all(seen.sees(int(seat)) for seat, _card in cards):
            return None
        shown = [[seat, card if seen.sees(int(seat)) else HIDDEN] for seat, card in cards]
        if seen.banker_up_card and event.data.get("banker_up_card"):  # kingmaker: the banker's first card is open
            first_banker = next(i for i, (seat, _c) in enumerate(cards) if int(seat) == 0)
            shown[first_banker][1] = cards[first_banker][1]
        return {**event.data, "cards": shown}
    if event.kind == re.CardDrawn.kind and not seen.sees(int(event.data["seat"])):
        return {**event.data, "card": HIDDEN}
    return None


def recorded_event(event: RecordedEvent, seen: Visibility = EVERYTHING) -> pb.RecordedEvent:
    redacted = _redacted(event, seen)
    return pb.RecordedEvent(
        sequence=event.position,
        kind=event.kind,
        payload_json=canonical_json(redacted if redacted is not None else event.data),
        chain_digest=event.digest,
        recorded_at=event.timestamp,
        request_id=event.command_id,
        redacted=redacted is not None,
    )


def recorded_events(events: Iterable[RecordedEvent], seen: Visibility = EVERYTHING) -> list[pb.RecordedEvent]:
    return [recorded_event(e, seen) for e in events]


# --- rounds ------------------------------------------------------------------------------------


def stakeholders(view: RoundView) -> set[str]:
    """Every wallet with money in the round: its stakes, side bets, and the player-banker."""
    people = {b.player for b in (*view.bets, *view.side_bets)}
    if view.banker:
        people.add(view.banker)
    return people


def round_(view: RoundView, seen: Visibility = EVERYTHING, *, with_events: bool = True) -> pb.Round:
    data = {e.kind: e.data for e in view.events}
    opened = data.get(re.RoundOpened.kind, {})
    shuffle = data.get(re.ShuffleCommitted.kind, {})
    message = pb.Round(
        round_id=view.round_id,
        table_id=view.table_id,
        round_no=view.round_no,
        profile=PROFILE_TO_PB.get(view.profile, pb.PROFILE_UNSPECIFIED),
        profile_version=view.profile_version,
        options=_options(dict(opened.get("profile_options", ()))),
        phase=PHASE_TO_PB.get(view.phase, pb.ROUND_PHASE_UNSPECIFIED),
        banker_player=view.banker or "",
        seats=[pb.Seat(seat=s, player=h or "") for s, h in opened.get("seats", ())],
        hands=[
            pb.Hand(
                seat=h.seat,
                holder=h.holder or "",
                cards=[
                    c if seen.sees(h.seat) or (h.seat == 0 and i == 0 and seen.banker_up_card) else HIDDEN
                    for i, c in enumerate(h.cards)
                ],
                done=h.done,
                revealed=h.revealed,
            )
            for h in view.hands
        ],
        bets=[pb.Bet(seat=b.seat, player=b.player, stake=b.stake, reserved=b.reserved) for b in view.bets],
        side_bets=[pb.Bet(seat=b.seat, player=b.player, stake=b.stake, reserved=b.reserved) for b in view.side_bets],
        commitment=view.commitment,
        client_seed=view.client_seed,
        nonce=view.nonce,
        algorithm=str(shuffle.get("algorithm", "")),
        server_seed=view.server_seed,
        outcome=view.outcome,
        version=view.version,
        min_stake=int(opened.get("min_stake", 0)),
        max_stake=int(opened.get("max_stake", 0)),
    )
    if view.turn is not None:
        message.turn = view.turn
    settled = data.get(re.RoundSettled.kind)
    voided = data.get(re.RoundVoided.kind)
    if settled is not None:
        message.results.extend(pb.WalletResult(player=p, reserved=r, net=n) for p, r, n in settled["wallets"])
        message.house_net = int(settled["house_net"])
        message.commission = int(settled["commission"])
    elif voided is not None:
        message.results.extend(pb.WalletResult(player=p, reserved=r, net=0) for p, r in voided["wallets"])
    if with_events:
        message.events.extend(recorded_events(view.events, seen))
    return message


def command_events(result: CommandResult, seen: Visibility = EVERYTHING) -> list[pb.RecordedEvent]:
    return recorded_events(result.events, seen)


# --- the log and audits ------------------------------------------------------------------------


def notification(item: Notification) -> pb.Notification:
    return pb.Notification(
        position=item.position,
        aggregate_kind=item.stream,
        aggregate_id=item.stream_id,
        sequence=item.stream_version,
        kind=item.kind,
        payload_json=canonical_json(item.data),
        recorded_at=item.timestamp,
    )


def verdict(round_id: str, result: Verdict) -> pb.Verdict:
    return pb.Verdict(
        round_id=round_id,
        ok=result.ok,
        checks=[pb.Check(name=c.name, passed=c.ok, detail=c.detail) for c in result.checks],
        first_difference=result.first_difference,
    )


def replay(round_id: str, result: Verdict, events: Iterable[re.RoundEvent]) -> pb.ReplayRoundResponse:
    from pokdeng_service.store.codec import to_data

    return pb.ReplayRoundResponse(
        round_id=round_id,
        ok=result.ok,
        checks=[pb.Check(name=c.name, passed=c.ok, detail=c.detail) for c in result.checks],
        events=[pb.ReplayedEvent(kind=e.kind, payload_json=canonical_json(_plain(to_data(e)))) for e in events],
    )


def _plain(value: Any) -> Any:
    result: Any = json.loads(json.dumps(value))
    return result
