"""Queries: wallets, statements, tables, rounds, legal commands and the notification log.

``Queries`` is a mixin of ``PokdengApp``: every method reads the record (through the loaders and caches
of ``loading.Loading``) and writes nothing. The views of each aggregate (``wallet_view``, ``table_view``,
``round_view``) are here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from pokdeng_core import table_events as te
from pokdeng_core.errors import InvalidCommand
from pokdeng_core.limits import MAX_STATEMENT_PAGE, check_id
from pokdeng_core.machine import legal_commands
from pokdeng_core.round_state import RoundState
from pokdeng_service.application.errors import NotFound, stream_forged
from pokdeng_service.application.loading import Loading
from pokdeng_service.application.notifications import Activity, address, notification
from pokdeng_service.application.views import (
    BetView,
    HandView,
    Notification,
    RecordedEvent,
    Reservation,
    RoundView,
    Seat,
    StatementLine,
    TableView,
    WalletView,
    built,
)
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import integrity, merkle
from pokdeng_service.store.aggregates import RoundRecord, TableRecord, Wallet

# The views are built with ``views.built`` (``model_construct`` without its per-call work): every value
# comes from the aggregate as the core made it, of the field's type already, so validating it would build
# the same view again (tests/service/test_views_built.py compares each view with the validated one, for
# every stream of a played store).


def wallet_view(wallet: Wallet) -> WalletView:
    return built(
        WalletView,
        wallet_id=wallet.wallet_id,
        balance=wallet.balance,
        reserved=wallet.reserved,
        available=wallet.available,
        reservations=tuple(built(Reservation, round_id=k, amount=v) for k, v in wallet.reservations.items()),
        version=wallet.version,
        currency=wallet.currency,
    )


def table_view(record: TableRecord) -> TableView:
    s = record.state
    profile = s.rules
    return built(
        TableView,
        table_id=s.table_id,
        profile=profile.name,
        profile_version=profile.version,
        options=profile.options,
        min_stake=s.min_stake,
        max_stake=s.max_stake,
        seat_count=s.seat_count,
        seats=tuple(built(Seat, seat=n, player=p) for n, p in s.seats),
        dealer=s.dealer,
        banker=s.banker,
        banker_rounds_left=s.tenure_left,
        bids=s.bids,
        current_round=s.round_id,
        round_no=s.round_no,
        currency=s.currency,
        turn_timeout=s.turn_timeout,
        house_net=s.house_net,
        commission=s.commission,
        version=record.version,
    )


def round_view(record: RoundRecord, events: tuple[RecordedEvent, ...] = ()) -> RoundView:
    s = record.state
    profile = s.rules
    holders = dict(s.seats)
    hands = tuple(
        built(
            HandView,
            seat=seat,
            holder=holders.get(seat) if seat else s.banker_player,
            cards=tuple(map(str, cards)),
            done=seat in s.done if seat else s.banker_done,
            revealed=seat in s.revealed if seat else s.phase.value in ("showdown", "settled", "closed"),
        )
        for seat, cards in s.hands
    )
    return built(
        RoundView,
        round_id=s.round_id,
        table_id=s.table_id,
        round_no=s.round_no,
        profile=profile.name,
        profile_version=profile.version,
        phase=s.phase.value,
        banker=s.banker_player,
        turn=s.turn,
        commitment=s.commitment,
        client_seed=s.client_seed,
        nonce=s.nonce,
        server_seed=s.server_seed,
        bets=tuple(_bet_view(b) for b in s.bets),
        side_bets=tuple(_bet_view(b) for b in s.side_bets),
        hands=hands,
        outcome=s.outcome,
        version=record.version,
        events=events,
    )


def _bet_view(bet: Any) -> BetView:
    return built(BetView, seat=bet.seat, player=bet.player, stake=bet.stake, reserved=bet.reserved)


class Queries(Loading):
    """The application's reads: wallets, statements, tables, rounds, legal commands, the notification log."""

    audit_hints: dict[str, int]
    _names: dict[UUID, str]

    def get_wallet(self, wallet_id: str) -> WalletView:
        check_id(wallet_id, "wallet_id")
        return wallet_view(self.load_wallet(wallet_id))

    def wallet_statement(self, wallet_id: str, after: int = 0, limit: int = 100) -> tuple[StatementLine, ...]:
        """The wallet's movements after position ``after`` (at most ``limit``), with the running balance."""
        check_id(wallet_id, "wallet_id")
        if limit < 1 or limit > MAX_STATEMENT_PAGE:
            raise InvalidCommand(f"limit is 1 to {MAX_STATEMENT_PAGE}", field="limit")
        if after < 0:
            raise InvalidCommand("after must not be negative", field="after")
        uuid = ag.wallet_uuid(wallet_id)
        self.load_wallet(wallet_id)
        balance = 0
        if after:
            balance = self.repository.get(uuid, version=after).balance
        lines = []
        item: Any
        for item in self.events.get(uuid, gt=after, limit=limit):
            name = type(item).__name__
            amount, reserved, round_id, reference = ag.wallet_movement(item)
            balance += amount
            lines.append(
                StatementLine(
                    position=item.originator_version,
                    kind=name,
                    amount=amount,
                    reserved_change=reserved,
                    balance_after=balance,
                    round_id=round_id,
                    reference=reference,
                    at=item.timestamp.isoformat(),
                )
            )
        return tuple(lines)

    def finished_rounds(
        self, table_id: str, after_round_no: int = 0, upto: int | None = None
    ) -> list[tuple[int, str, str]]:
        """(round number, round id, last digest) of the table's closed rounds, in order."""
        out = []
        for event in self.stream_events(ag.table_uuid(table_id)):
            if event.kind != te.RoundFinished.kind:
                continue
            number = int(event.data["round_id"].rsplit("#", 1)[1])
            if number > after_round_no and (upto is None or number <= upto):
                out.append((number, event.data["round_id"], event.data["round_digest"]))
        return out

    def inclusion_proof(self, round_id: str) -> dict[str, Any] | None:
        """The proof that a closed round is in its table's checkpoint (None until a checkpoint covers it)."""
        state = self.round_state(round_id)
        number = state.round_no
        for event in self.stream_events(ag.table_uuid(state.table_id)):
            if event.kind != te.CheckpointRecorded.kind:
                continue
            first, last = event.data["first_round_no"], event.data["last_round_no"]
            if not first <= number <= last:
                continue
            rounds = self.finished_rounds(state.table_id, first - 1, last)
            leaves = [merkle.leaf_hash(r, d) for _n, r, d in rounds]
            index = next(i for i, (_n, r, _d) in enumerate(rounds) if r == round_id)
            return {
                "table_id": state.table_id,
                "period": event.data["period"],
                "checkpoint_position": event.position,
                "checkpoint_digest": event.digest,
                "root": event.data["root"],
                "size": len(leaves),
                "index": index,
                "leaf": leaves[index].hex(),
                "path": [h.hex() for h in merkle.inclusion_proof(leaves, index)],
            }
        return None

    def get_table(self, table_id: str) -> TableView:
        check_id(table_id, "table_id")
        return table_view(self.load_table(table_id))

    def round_state(self, round_id: str) -> RoundState:
        """The round's public state (no shoe)."""
        check_id(round_id, "round_id")
        return self.load_round(round_id, with_shoe=False).state

    def get_round(self, round_id: str, with_events: bool = True) -> RoundView:
        check_id(round_id, "round_id")
        record = self.load_round(round_id, with_shoe=False)
        return round_view(record, self.view_events(record.id, record.version) if with_events else ())

    def get_rounds(self, round_ids: Sequence[str]) -> list[RoundView]:
        """``get_round`` of each round, in order (the first that fails raises), the rounds the aggregate cache does
        not hold read together, each stream once (``read_rounds``)."""
        read = self.read_rounds(round_ids)
        return [round_view(*read[r]) if r in read else self.get_round(r) for r in round_ids]

    def round_view_at(self, round_id: str, version: int) -> RoundView:
        """The round's view as it was at ``version`` (what a command's first answer showed: a retry's events
        are shown to a player as they were then, hidden cards and withheld digests alike)."""
        check_id(round_id, "round_id")
        uuid = ag.round_uuid(round_id)  # (the caller has loaded the round: its identity is checked)
        record = self.repository.get(uuid, version=version, projector_func=integrity.verified_project)
        return round_view(record, self.stream_events(uuid, lte=version))

    def round_events(self, round_id: str) -> tuple[RecordedEvent, ...]:
        """The round's stored events, read afresh; its stream must open with the round's own ``Started``."""
        check_id(round_id, "round_id")
        uuid = ag.round_uuid(round_id)
        recorded = self.stream_events(uuid)
        if not recorded:
            raise NotFound(f"round {round_id!r} not found", round=round_id)
        first = recorded[0]
        claimed = first.data.get("round_id") if first.kind == "Started" else None
        if first.position != 1 or claimed != round_id:
            problem = f"its first event is {first.kind} at {first.position}, naming round {claimed!r}"
            raise stream_forged("round", round_id, uuid, problem)
        return recorded

    def round_moved_at(self, round_id: str, version: int) -> datetime | None:
        """When the round's event at ``version`` was recorded (the turn clock's start of a wait)."""
        check_id(round_id, "round_id")
        item = next(iter(self.events.get(ag.round_uuid(round_id), gt=version - 1, lte=version)), None)
        return None if item is None else item.timestamp  # type: ignore[attr-defined]

    def legal_commands(self, round_id: str, seat: int | None = None) -> tuple[str, ...]:
        return legal_commands(self.round_state(round_id), seat)

    def read_notifications(self, after: int = 0, limit: int = 1000) -> tuple[Notification, ...]:
        """Events of every stream after log position ``after``, in the order they were recorded."""
        if after < 0 or not 1 <= limit <= 10_000:
            raise InvalidCommand("after >= 0 and 1 <= limit <= 10000", field="limit")
        out = []
        for item in self.recorder.select_notifications(start=after + 1, limit=limit):
            out.append(notification(item.id, self.mapper.to_domain_event(item), self._wallet_name))
        return tuple(out)

    def log_activity(self, after: int = 0, limit: int = 1000, topics: Sequence[str] = ()) -> tuple[Activity, ...]:
        """``read_notifications`` without the events' data: where each event is and what it is (the turn
        clock follows the log with it); with ``topics``, only the events stored under those topics (the
        store selects them: nothing else is read or decoded)."""
        if after < 0 or not 1 <= limit <= 10_000:
            raise InvalidCommand("after >= 0 and 1 <= limit <= 10000", field="limit")
        out = []
        for item in self.recorder.select_notifications(start=after + 1, limit=limit, topics=topics):
            domain_event: Any = self.mapper.to_domain_event(item)
            stream, _id, stream_id, _data = address(domain_event, self._wallet_name)
            kind = getattr(domain_event, "kind", None) or type(domain_event).__name__
            out.append(Activity(item.id, stream, stream_id, kind, domain_event.timestamp.isoformat()))
        return tuple(out)

    def _wallet_name(self, uuid: UUID) -> str:
        name = self._names.get(uuid)
        if name is None:
            first = next(iter(self.events.get(uuid, lte=1)), None)
            name = getattr(first, "wallet_id", str(uuid))
            if len(self._names) > 100_000:
                self._names.clear()
            self._names[uuid] = name
        return name

    @property
    def max_position(self) -> int:
        return self.recorder.max_notification_id() or 0
