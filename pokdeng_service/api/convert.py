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

from google.protobuf.duration_pb2 import Duration

from pokdeng_client import events as typed
from pokdeng_client.chain import timestamp_of as timestamp
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import currencies
from pokdeng_core import events as re
from pokdeng_core import table_events as te
from pokdeng_core.machine import LISTED_COMMANDS
from pokdeng_service.application.access import participants as participants  # re-exported
from pokdeng_service.application.views import (
    Notification,
    RecordedEvent,
    Reservation,
    RoundView,
    StatementLine,
    TableView,
    WalletView,
)
from pokdeng_service.audit import Verdict
from pokdeng_service.store.codec import canonical_bytes, canonical_json

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


# --- shared values -------------------------------------------------------------------------------


def currency(code: str) -> pb.Currency:
    return pb.Currency(code=code, exponent=currencies.exponent(code))


OUTCOME_TO_PB: dict[str, pb.RoundOutcome.ValueType] = {
    "settled": pb.ROUND_OUTCOME_SETTLED,
    "voided": pb.ROUND_OUTCOME_VOIDED,
}
OUTCOME_FROM_PB: dict[int, str] = {int(v): k for k, v in OUTCOME_TO_PB.items()}

COMMAND_TO_PB: dict[str, pb.CommandKind.ValueType] = {
    name: pb.CommandKind.Value("COMMAND_KIND_" + name.upper()) for name in LISTED_COMMANDS
}
"""Each command ``legal_commands`` may list (the machine's table) as its ``CommandKind``: ``place_bet`` is
``COMMAND_KIND_PLACE_BET`` (a command without its value in the proto fails here, at import)."""


# --- wallets -----------------------------------------------------------------------------------


def wallet(view: WalletView, *, with_reservations: bool = True) -> pb.Wallet:
    return pb.Wallet(
        wallet_id=view.wallet_id,
        balance=view.balance,
        reserved=view.reserved,
        available=view.available,
        version=view.version,
        reservations=[_reservation(r) for r in view.reservations] if with_reservations else [],
        currency=currency(view.currency),
    )


def wallet_balance(w: Any) -> pb.Wallet:
    """A wallet from the read models' directory (``readmodels.WalletBalance``), without its reservations."""
    return pb.Wallet(
        wallet_id=w.wallet_id,
        balance=w.balance,
        reserved=w.reserved,
        available=w.available,
        version=w.version,
        currency=currency(w.currency),
    )


def _reservation(r: Reservation) -> pb.Reservation:
    return pb.Reservation(round_id=r.round_id, amount=r.amount)


STATEMENT_KINDS: dict[str, pb.StatementEntryKind.ValueType] = {
    "Deposited": pb.STATEMENT_ENTRY_KIND_DEPOSITED,
    "Withdrawn": pb.STATEMENT_ENTRY_KIND_WITHDRAWN,
    "FundsReserved": pb.STATEMENT_ENTRY_KIND_FUNDS_RESERVED,
    "RoundSettled": pb.STATEMENT_ENTRY_KIND_ROUND_SETTLED,
    "ReservationReleased": pb.STATEMENT_ENTRY_KIND_RESERVATION_RELEASED,
    "Opened": pb.STATEMENT_ENTRY_KIND_OPENED,
}


def statement_entry(line: StatementLine) -> pb.StatementEntry:
    return pb.StatementEntry(
        sequence=line.position,
        kind=STATEMENT_KINDS.get(line.kind, pb.STATEMENT_ENTRY_KIND_UNSPECIFIED),
        amount=line.amount,
        reserved_change=line.reserved_change,
        balance=line.balance_after,
        round_id=line.round_id,
        reference=line.reference,
        record_time=timestamp(line.at),
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
        turn_timeout=Duration(seconds=view.turn_timeout),
        seated=[pb.Seat(seat=s.seat, player=s.player) for s in view.seats],
        banker=view.banker or "",
        banker_rounds_left=view.banker_rounds_left,
        bids=[pb.BankerBid(player=p, rounds=r, capital=c) for p, r, c in view.bids],
        current_round_id=view.current_round or "",
        round_no=view.round_no,
        house_net=view.house_net,
        commission=view.commission,
        version=view.version,
        currency=currency(view.currency),
    )


def table_summary(t: Any) -> pb.TableSummary:
    """A table from the read models' directory (``readmodels.TableSummary``)."""
    return pb.TableSummary(
        table_id=t.table_id,
        profile=PROFILE_TO_PB.get(t.profile, pb.PROFILE_UNSPECIFIED),
        profile_version=t.profile_version,
        seats=t.seats,
        min_stake=t.min_stake,
        max_stake=t.max_stake,
        currency=currency(t.currency),
        round_no=t.round_no,
        current_round_id=t.current_round_id or "",
        open_time=timestamp(t.opened_at),
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
    hidden_from: int | None = None  # the position of the deal while a dealt card is hidden: digests withheld

    def sees(self, seat: int) -> bool:
        return self.everything or seat in self.seats


EVERYTHING = Visibility()


SPECTATOR = ""  # nobody's id (ids have 1 to 128 characters): ``visibility_for`` gives what the whole table sees


def visibility_for(player: str | None, view: RoundView) -> Visibility:
    """What ``player`` (None: an operator or auditor) may see of the round now."""
    if player is None or view.phase in OVER:
        return EVERYTHING
    seats = {h.seat for h in view.hands if h.revealed or h.holder == player}  # seat 0's holder: the player-banker
    if view.banker == player:
        seats.add(0)
    up_card, deal = False, None
    for event in view.events:  # hands shown to the table: a pok at once, the banker's reveals; the deal
        if event.kind == re.PokDeclared.kind:
            seats.add(int(event.data["seat"]))
        elif event.kind == re.HandsRevealed.kind:
            seats.update(int(s) for s, _cards in event.data["hands"])
        elif event.kind == re.CardsDealt.kind:
            deal = event.position if deal is None else deal
            up_card = up_card or bool(event.data.get("banker_up_card"))
    if not any(h.cards and h.seat not in seats for h in view.hands):  # (a kingmaker banker: its second card)
        deal = None  # nothing dealt is hidden: no digest to withhold
    return Visibility(everything=False, seats=frozenset(seats), banker_up_card=up_card, hidden_from=deal)


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


WITHHELD = "(withheld while a dealt card is hidden)"


def seen_events(events: Sequence[RecordedEvent], seen: Visibility) -> list[RecordedEvent]:
    """A round's stored events as a viewer ``seen`` may have them: hidden cards blanked, and each digest that
    would commit to one replaced by ``WITHHELD`` (the dispute page of an open round, ``pokdeng replay``)."""
    shown = []
    for event in events:
        redacted = _redacted(event, seen)
        if redacted is not None:
            event = event._replace(data=redacted)
        if _hides(seen, event.position) and event.digest:
            event = event._replace(digest=WITHHELD)
        shown.append(event)
    return shown


def _hides(seen: Visibility, position: int) -> bool:
    """Whether an event's digest would commit to a card the caller may not see: from the deal on, while a
    dealt card is hidden from it (each digest covers every event before it)."""
    return seen.hidden_from is not None and position >= seen.hidden_from


def recorded_event(
    event: RecordedEvent,
    stream: str = "round",
    seen: Visibility = EVERYTHING,
    wallet_after: WalletView | None = None,
    redacted: dict[str, Any] | None = None,
    withhold_digest: bool = False,
) -> pb.RecordedEvent:
    """A stored event of a ``stream`` ("round", "table", "wallet") as its typed message; ``redacted``: the
    payload the caller may see, when it is not the whole (hidden cards are found from ``seen``).

    The chain digest is withheld (``""``) where it would commit to what the caller may not see: in a
    round, from the deal on while a dealt card is hidden from it (``Visibility.hidden_from``); and where
    ``withhold_digest`` (a table's events for a player: a rival's capital). A digest covers the whole
    payload, hidden cards included, and every later digest covers it, so with it anyone could try the
    52 cards (or a bidder's capital) until one matched. Once every card is shown, every digest is."""
    if redacted is None:
        redacted = _redacted(event, seen)
    data = redacted if redacted is not None else event.data
    message = pb.RecordedEvent(
        sequence=event.position,
        chain_digest="" if withhold_digest or _hides(seen, event.position) else event.digest,
        record_time=timestamp(event.timestamp),
        request_id=event.command_id,
        redacted=redacted is not None,
        canonical_data=b"" if redacted is not None else canonical_bytes(event.data),
    )
    member = typed.member_of(stream, event.kind)
    if member is not None:
        typed.set_event(message, member, data)
    if wallet_after is not None:
        message.wallet_after.balance = wallet_after.balance
        message.wallet_after.reservations.extend(
            _reservation(r) for r in sorted(wallet_after.reservations, key=lambda r: r.round_id)
        )
    return message


def recorded_events(
    events: Iterable[RecordedEvent], stream: str = "round", seen: Visibility = EVERYTHING
) -> list[pb.RecordedEvent]:
    return [recorded_event(e, stream, seen) for e in events]


def table_events(events: Iterable[RecordedEvent], player: str | None = None) -> list[pb.RecordedEvent]:
    """A table's facts as ``player`` (None: an operator or auditor) may see them: another bidder's
    capital (its wallet's available funds) is blanked to 0, and the event marked redacted; a player gets
    no chain digests of a table (each would commit to every bid before it: ``recorded_event``)."""
    out = []
    for event in events:
        hidden = None
        if player is not None and event.kind == te.BankerBidPlaced.kind and event.data.get("player") != player:
            hidden = {**event.data, "capital": 0}
        out.append(recorded_event(event, "table", redacted=hidden, withhold_digest=player is not None))
    return out


# --- rounds ------------------------------------------------------------------------------------


def stakeholders(view: RoundView) -> set[str]:
    """Every wallet with money in the round: its stakes, side bets, and the player-banker."""
    people = {b.player for b in (*view.bets, *view.side_bets)}
    if view.banker:
        people.add(view.banker)
    return people


def round_(view: RoundView, seen: Visibility = EVERYTHING, *, with_events: bool = True) -> pb.Round:
    """The round's message as ``seen`` may see it: its fields, seats, hands, bets, times and results, and with
    ``with_events`` its events."""
    data = {e.kind: e.data for e in view.events}
    opened = data.get(re.RoundOpened.kind, {})
    message = _round_fields(view, opened, data.get(re.ShuffleCommitted.kind, {}))
    # (the repeated messages are added in place: passed to the constructor, each would be built, then copied)
    add_seat = message.seats.add
    for seat, holder in opened.get("seats", ()):
        add_seat(seat=seat, player=holder or "")
    _add_hands(message, view, seen)
    for bets, views in ((message.bets, view.bets), (message.side_bets, view.side_bets)):
        add_bet = bets.add
        for b in views:
            add_bet(seat=b.seat, player=b.player, stake=b.stake, reserved=b.reserved)
    _add_times(message, view)
    if view.turn is not None:
        message.turn = view.turn
    _add_results(message, data)
    if with_events:
        message.events.extend(recorded_events(view.events, "round", seen))
    return message


def _round_fields(view: RoundView, opened: dict[str, Any], shuffle: dict[str, Any]) -> pb.Round:
    """The round's message with its single fields: the round's, its opening's and its shuffle's."""
    return pb.Round(
        round_id=view.round_id,
        table_id=view.table_id,
        round_no=view.round_no,
        profile=PROFILE_TO_PB.get(view.profile, pb.PROFILE_UNSPECIFIED),
        profile_version=view.profile_version,
        options=_options(dict(opened.get("profile_options", ()))),
        phase=PHASE_TO_PB.get(view.phase, pb.ROUND_PHASE_UNSPECIFIED),
        banker_player=view.banker or "",
        commitment=view.commitment,
        client_seed=view.client_seed,
        nonce=view.nonce,
        algorithm=str(shuffle.get("algorithm", "")),
        server_seed=view.server_seed,
        outcome=OUTCOME_TO_PB.get(view.outcome, pb.ROUND_OUTCOME_UNSPECIFIED),
        version=view.version,
        min_stake=int(opened.get("min_stake", 0)),
        max_stake=int(opened.get("max_stake", 0)),
        currency=currency(str(opened.get("currency", currencies.DEFAULT))),
    )


def _add_hands(message: pb.Round, view: RoundView, seen: Visibility) -> None:
    """The hands, each card ``seen`` may not see blanked (the banker's up card shown where the rules say)."""
    add_hand = message.hands.add
    for h in view.hands:
        shown = seen.sees(h.seat)
        add_hand(
            seat=h.seat,
            holder=h.holder or "",
            cards=[
                c if shown or (h.seat == 0 and i == 0 and seen.banker_up_card) else HIDDEN
                for i, c in enumerate(h.cards)
            ],
            done=h.done,
            revealed=h.revealed,
        )


def _add_times(message: pb.Round, view: RoundView) -> None:
    """When the round opened (its first event) and closed (its last, if it closed it)."""
    if view.events:
        message.open_time.CopyFrom(timestamp(view.events[0].timestamp))
        closing = view.events[-1]
        if closing.kind == re.RoundClosed.kind:
            message.close_time.CopyFrom(timestamp(closing.timestamp))


def _add_results(message: pb.Round, data: dict[str, dict[str, Any]]) -> None:
    """Each wallet's result of a settled round (and the house's net and commission), or of a voided one."""
    settled = data.get(re.RoundSettled.kind)
    voided = data.get(re.RoundVoided.kind)
    if settled is not None:
        message.results.extend(pb.WalletResult(player=p, reserved=r, net=n) for p, r, n in settled["wallets"])
        message.house_net = int(settled["house_net"])
        message.commission = int(settled["commission"])
    elif voided is not None:
        message.results.extend(pb.WalletResult(player=p, reserved=r, net=0) for p, r in voided["wallets"])


# --- the log and audits ------------------------------------------------------------------------

STREAM_KINDS: dict[str, pb.StreamKind.ValueType] = {
    "wallet": pb.STREAM_KIND_WALLET,
    "table": pb.STREAM_KIND_TABLE,
    "round": pb.STREAM_KIND_ROUND,
    "seed": pb.STREAM_KIND_SEED,
    "request": pb.STREAM_KIND_REQUEST,
    "log": pb.STREAM_KIND_LOG,
}


def notification(item: Notification) -> pb.Notification:
    event = pb.RecordedEvent(
        sequence=item.stream_version,
        record_time=timestamp(item.timestamp),
        canonical_data=canonical_json(item.data).encode("utf-8"),
    )
    member = typed.member_of(item.stream, item.kind)
    if member is not None:
        typed.set_event(event, member, item.data)
    return pb.Notification(
        position=item.position,
        stream_kind=STREAM_KINDS.get(item.stream, pb.STREAM_KIND_UNSPECIFIED),
        stream_id=item.stream_id,
        event=event,
    )


def checks(result: Verdict) -> list[pb.Check]:
    return [pb.Check(name=c.name, passed=c.ok, detail=c.detail) for c in result.checks]


def verdict(round_id: str, result: Verdict) -> pb.VerifyRoundResponse:
    return pb.VerifyRoundResponse(
        round_id=round_id, ok=result.ok, checks=checks(result), first_difference=result.first_difference
    )


def replay(round_id: str, result: Verdict, events: Iterable[re.RoundEvent]) -> pb.ReplayRoundResponse:
    from pokdeng_service.store.codec import to_data

    replayed = []
    for e in events:
        member = typed.member_of("round", e.kind)
        replayed.append(
            pb.ReplayedEvent(
                kind=typed.event_kind(member) if member else pb.EVENT_KIND_UNSPECIFIED,
                canonical_data=canonical_json(_plain(to_data(e))).encode("utf-8"),
            )
        )
    return pb.ReplayRoundResponse(round_id=round_id, ok=result.ok, checks=checks(result), events=replayed)


def _plain(value: Any) -> Any:
    result: Any = json.loads(json.dumps(value))
    return result
