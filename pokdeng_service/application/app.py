"""The pokdeng application: commands load aggregates, ask the pure core to decide, and save atomically.

Every command carries a client request id. The first outcome is recorded in a
``CommandRecord`` saved in the same transaction as the command's events, so a
retry with the same id returns the same result and writes nothing. A version
conflict (another writer got there first) is retried a bounded number of times,
then surfaces as ``Conflict``.

Money moves only in the transaction that settles or voids a round: the round's
``RoundSettled`` (or ``RoundVoided``) event, every wallet's release-and-apply
event and the table's ledger entry are saved together.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError, JSONTranscoder, Recording
from eventsourcing.utils import strtobool

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core import table as tc
from pokdeng_core.errors import DomainError, InvalidCommand, WrongPhase
from pokdeng_core.machine import RoundState, Shoe, attach_shoe, decide, legal_commands
from pokdeng_core.profiles import ProfileError, get_profile
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment
from pokdeng_service.application.errors import AlreadyExists, Conflict, DuplicateRequest, NotFound
from pokdeng_service.application.views import (
    BetView,
    CommandResult,
    HandView,
    Notification,
    RecordedEvent,
    Reservation,
    RoundView,
    Seat,
    StatementLine,
    TableView,
    WalletView,
)
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import merkle
from pokdeng_service.store.aggregates import CommandRecord, RoundRecord, SealedSeed, TableRecord, Wallet
from pokdeng_service.store.facts import fact_of, payload_of
from pokdeng_service.store.vault import SeedVault, fresh_seed

T = TypeVar("T")
MAX_ATTEMPTS = 8
MAX_ID = 128
MAX_AMOUNT = 2**63 - 1
MAX_CLIENT_SEED = 256


def _check_id(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidCommand(f"{field} is required", field=field)
    if len(value) > MAX_ID:
        raise InvalidCommand(f"{field} has at most {MAX_ID} characters", field=field)
    if any(ord(ch) < 32 for ch in value):
        raise InvalidCommand(f"{field} may not contain control characters", field=field)
    return value


def _check_amount(value: object, field: str = "amount") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCommand(f"{field} must be a whole number of minor units", field=field)
    if value <= 0:
        raise InvalidCommand(f"{field} must be positive", field=field)
    if value > MAX_AMOUNT:
        raise InvalidCommand(f"{field} is too large", field=field)
    return value


def _check_int(value: object, field: str, low: int = 0, high: int = MAX_AMOUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCommand(f"{field} must be a whole number, not {value!r}", field=field)
    if not low <= value <= high:
        raise InvalidCommand(f"{field} must be {low} to {high}, not {value}", field=field)
    return value


def _fingerprint(name: str, args: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([name, args], sort_keys=True, default=str).encode()).hexdigest()


class PokdengApp(Application[UUID]):
    """The round engine's application: tables, rounds, wallets and the audit record."""

    name = "pokdeng"
    snapshotting_intervals = {Wallet: 100, TableRecord: 100}  # noqa: RUF012 - eventsourcing's class setting
    # (a snapshot replays up to 100 events: without the library projector's per-event Protocol check)
    snapshotting_projectors = {Wallet: ag.project, TableRecord: ag.project}  # noqa: RUF012
    env = {"AGGREGATE_CACHE_MAXSIZE": "2000", "COMPRESSOR_TOPIC": ""}  # noqa: RUF012

    def __init__(self, env: dict[str, str] | None = None, vault: SeedVault | None = None) -> None:
        super().__init__(env)
        # One writer per store (the embedded SQLite default: one server process per file):
        # the aggregate cache is then authoritative and commands read nothing back. A stale
        # cached aggregate can only come from another writer, which the version check of the
        # save catches; the conflicting aggregates are then evicted and the command retried.
        self.single_writer = strtobool(self.env.get("POKDENG_SINGLE_WRITER", "n") or "n")
        if self.single_writer:
            self.repository.fastforward = False
        self.vault = vault or SeedVault.ephemeral()
        self._shoes: OrderedDict[str, Shoe] = OrderedDict()
        self._shoes_lock = threading.Lock()
        self._names: dict[UUID, str] = {}
        self._view_cache: OrderedDict[UUID, tuple[RecordedEvent, ...]] = OrderedDict()
        self._view_lock = threading.Lock()
        # Per table, how far past position 2n + 2 round n's round_finished was last found
        # (seatings and bids push it on): where audits look first. Only a hint: what is
        # found there is checked, and the search falls back to walking the stream.
        self.audit_hints: dict[str, int] = {}

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """``Application.save`` (eventsourcing 9.5.6), collecting our aggregates' events without the
        library's runtime ``Protocol`` checks, which cost more than the rest of collecting on Python 3.11."""
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        for obj in objs:
            if isinstance(obj, Aggregate):
                processing_event.events.extend(obj.collect_events())
                processing_event.aggregates[obj.id] = obj
            elif obj is not None:
                processing_event.collect_events(obj)
        processing_event.saved_kwargs.update(kwargs)
        recordings = self._record(processing_event)
        self._take_snapshots(processing_event)
        self._notify(recordings)
        return recordings

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        ag.register_transcodings(transcoder)

    # -- the command pipeline --------------------------------------------------------------

    def _execute(
        self,
        request_id: str,
        name: str,
        args: dict[str, Any],
        work: Callable[[str], tuple[list[Aggregate], str, str, Aggregate]],
    ) -> CommandResult:
        """Run ``work`` (load, decide, record) and save its aggregates with the request's record, atomically.

        The request's record is not read first: the save itself finds a repeated request id,
        because the record's first event then conflicts with the stored one (nothing of the
        transaction is written). Only when the work or the save fails is the record looked
        up, and a repeated request returns its first result (``replayed=True``).
        """
        _check_id(request_id, "request_id")
        fingerprint = _fingerprint(name, args)
        record_id = ag.command_uuid(request_id)
        for _attempt in range(MAX_ATTEMPTS):
            done = None
            try:
                aggregates, stream, stream_id, target = work(request_id)
            except Exception:
                done = self._command_record(record_id)
                if done is None:
                    raise
            if done is not None:  # (outside the except clause: a DuplicateRequest has no context)
                return self._replayed(done, fingerprint)
            pending = list(target.pending_events)
            before = target.version - len(pending)
            result = {"stream": stream, "id": stream_id, "from": before + 1, "to": target.version}
            record = CommandRecord(request_id, fingerprint, result)
            try:
                self.save(*aggregates, record)
            except IntegrityError:
                conflict = True
            else:
                conflict = False
            if conflict:
                done = self._command_record(record_id)
                if done is not None:
                    return self._replayed(done, fingerprint)
                self._evict(aggregates)
                continue
            self._after_save(aggregates)
            events = tuple(_recorded_event(item) for item in pending)
            if stream == "round" and events:
                self._extend_view_events(target.id, events)
            return CommandResult(request_id=request_id, stream=stream, id=stream_id, events=events, replayed=False)
        raise Conflict(f"request {request_id!r} kept conflicting with concurrent writers; try again")

    def _evict(self, aggregates: list[Aggregate]) -> None:
        """Forget cached copies of aggregates whose save conflicted, so that the retry reads the store."""
        cache = self.repository.cache
        if cache is None:
            return
        for aggregate in aggregates:
            with contextlib.suppress(KeyError):
                cache.get(aggregate.id, evict=True)

    def _after_save(self, aggregates: list[Aggregate]) -> None:
        """Keep the aggregates just saved in the aggregate cache, so that the next command finds them
        at their new version instead of reading back and replaying the events it has just written.
        (The cache still fast-forwards from the store on every load, so other writers are seen.)
        A round just started has its shoe remembered from the seed just sealed and saved."""
        for sealed in aggregates:
            if isinstance(sealed, SealedSeed):
                record = next((a for a in aggregates if isinstance(a, RoundRecord)), None)
                if record is not None and record.round_id == sealed.round_id:
                    try:
                        seed = self.vault.open(sealed.nonce, sealed.sealed, sealed.round_id)
                        shoe = attach_shoe(record.state, seed).shoe
                    except Exception:  # the first command will unseal it (and say what is wrong)
                        shoe = None
                    if shoe is not None:
                        self._remember_shoe(sealed.round_id, shoe)
        cache = self.repository.cache
        if cache is None or not self.repository.deepcopy_from_cache:
            return
        for aggregate in aggregates:
            if isinstance(aggregate, RoundRecord):
                if aggregate.state.shoe is not None:  # the shoe is private: never kept in the cache
                    aggregate.state = ag.with_shoe(aggregate.state, None)
            elif not isinstance(aggregate, TableRecord | Wallet):
                continue
            cache.put(aggregate.id, aggregate)

    def _command_record(self, record_id: UUID) -> CommandRecord | None:
        try:
            record: Any = self.repository.get(record_id)
        except AggregateNotFoundError:
            return None
        assert isinstance(record, CommandRecord)
        return record

    def _replayed(self, record: CommandRecord, fingerprint: str) -> CommandResult:
        if record.fingerprint != fingerprint:
            raise DuplicateRequest(
                f"request id {record.request_id!r} was already used for a different command", field="request_id"
            )
        return self._result(record.request_id, record.result, replayed=True)

    def _result(self, request_id: str, result: dict[str, Any], replayed: bool = False) -> CommandResult:
        stream, stream_id = result["stream"], result["id"]
        uuid = {"round": ag.round_uuid, "table": ag.table_uuid, "wallet": ag.wallet_uuid}[stream](stream_id)
        events = self._recorded(uuid, result["from"] - 1, result["to"])
        return CommandResult(request_id=request_id, stream=stream, id=stream_id, events=events, replayed=replayed)

    def _recorded(self, uuid: UUID, gt: int | None = None, lte: int | None = None) -> tuple[RecordedEvent, ...]:
        out = []
        for item in self.events.get(uuid, gt=gt, lte=lte):
            out.append(_recorded_event(item))
        return tuple(out)

    def stream_events(self, uuid: UUID, gt: int | None = None, lte: int | None = None) -> tuple[RecordedEvent, ...]:
        """A stream's stored events after position ``gt`` up to ``lte``, read afresh from the store."""
        return self._recorded(uuid, gt, lte)

    def server_seed(self, round_id: str) -> bytes:
        """The round's server seed: the revealed one of a closed round, else unsealed from the vault."""
        return self._shoe(self._round(round_id, with_shoe=False)).server_seed

    def _view_events(self, uuid: UUID, version: int) -> tuple[RecordedEvent, ...]:
        """A round's events up to ``version`` for its view, reading only those not read before.

        Views only: audits always read the store afresh (``round_events``), so that an edit of
        the stored rows is seen by a running server too.
        """
        with self._view_lock:
            known = self._view_cache.get(uuid, ())
            if known:
                self._view_cache.move_to_end(uuid)
        last = known[-1].position if known else 0
        if last > version:
            return tuple(e for e in known if e.position <= version)
        if last < version:
            known = known + self._recorded(uuid, gt=last, lte=version)
            with self._view_lock:
                self._view_cache[uuid] = known
                while len(self._view_cache) > 1024:
                    self._view_cache.popitem(last=False)
        return known

    def _extend_view_events(self, uuid: UUID, events: tuple[RecordedEvent, ...]) -> None:
        """Add the events a command just saved to the round's view cache, when they follow on."""
        with self._view_lock:
            known = self._view_cache.get(uuid, ())
            last = known[-1].position if known else 0
            if events[0].position == last + 1:
                self._view_cache[uuid] = known + events
                self._view_cache.move_to_end(uuid)
                while len(self._view_cache) > 1024:
                    self._view_cache.popitem(last=False)

    # -- loading ---------------------------------------------------------------------------

    def _get(self, uuid: UUID, cls: type[T], what: str, ident: str) -> T:
        try:
            aggregate = self.repository.get(uuid, projector_func=ag.project)
        except AggregateNotFoundError:
            raise NotFound(f"{what} {ident!r} not found", **{what: ident}) from None
        if not isinstance(aggregate, cls):
            raise NotFound(f"{what} {ident!r} not found", **{what: ident})
        return aggregate

    def _wallet(self, wallet_id: str) -> Wallet:
        return self._get(ag.wallet_uuid(wallet_id), Wallet, "wallet", wallet_id)

    def _table(self, table_id: str) -> TableRecord:
        return self._get(ag.table_uuid(table_id), TableRecord, "table", table_id)

    def _round(self, round_id: str, with_shoe: bool = True) -> RoundRecord:
        record = self._get(ag.round_uuid(round_id), RoundRecord, "round", round_id)
        if with_shoe and not record.state.is_closed:
            record.state = ag.with_shoe(record.state, self._shoe(record))
        return record

    def _shoe(self, record: RoundRecord) -> Shoe:
        with self._shoes_lock:
            shoe = self._shoes.get(record.round_id)
            if shoe is not None:
                self._shoes.move_to_end(record.round_id)
                return shoe
        sealed = self._get(ag.seed_uuid(record.round_id), SealedSeed, "round", record.round_id)
        seed = self.vault.open(sealed.nonce, sealed.sealed, record.round_id)
        attached = attach_shoe(record.state, seed).shoe
        assert attached is not None
        self._remember_shoe(record.round_id, attached)
        return attached

    def _remember_shoe(self, round_id: str, shoe: Shoe) -> None:
        with self._shoes_lock:
            self._shoes[round_id] = shoe
            while len(self._shoes) > 1024:
                self._shoes.popitem(last=False)

    # -- wallets ---------------------------------------------------------------------------

    def open_wallet(self, request_id: str, wallet_id: str) -> CommandResult:
        _check_id(wallet_id, "wallet_id")

        def work(_rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            try:
                self.repository.get(ag.wallet_uuid(wallet_id))
            except AggregateNotFoundError:
                wallet = Wallet(wallet_id)
                return [wallet], "wallet", wallet_id, wallet
            raise AlreadyExists(f"wallet {wallet_id!r} already exists", wallet=wallet_id)

        return self._execute(request_id, "open_wallet", {"wallet_id": wallet_id}, work)

    def deposit(self, request_id: str, wallet_id: str, amount: int) -> CommandResult:
        _check_id(wallet_id, "wallet_id")
        _check_amount(amount)

        def work(rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            wallet = self._wallet(wallet_id)
            if wallet.balance + amount + 2 * wallet.reserved > MAX_AMOUNT:  # room for what its stakes may win
                raise InvalidCommand("the balance would overflow", field="amount")
            wallet.deposit(amount, rid)
            return [wallet], "wallet", wallet_id, wallet

        return self._execute(request_id, "deposit", {"wallet_id": wallet_id, "amount": amount}, work)

    def withdraw(self, request_id: str, wallet_id: str, amount: int) -> CommandResult:
        _check_id(wallet_id, "wallet_id")
        _check_amount(amount)

        def work(rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            wallet = self._wallet(wallet_id)
            if amount > wallet.available:
                from pokdeng_core.errors import InsufficientFunds

                raise InsufficientFunds(
                    f"wallet {wallet_id!r} has {wallet.available} available (reserved funds cannot be withdrawn)",
                    required=amount,
                    available=wallet.available,
                    wallet=wallet_id,
                )
            wallet.withdraw(amount, rid)
            return [wallet], "wallet", wallet_id, wallet

        return self._execute(request_id, "withdraw", {"wallet_id": wallet_id, "amount": amount}, work)

    def get_wallet(self, wallet_id: str) -> WalletView:
        _check_id(wallet_id, "wallet_id")
        wallet = self._wallet(wallet_id)
        return WalletView(
            wallet_id=wallet.wallet_id,
            balance=wallet.balance,
            reserved=wallet.reserved,
            available=wallet.available,
            reservations=tuple(Reservation(round_id=k, amount=v) for k, v in wallet.reservations.items()),
            version=wallet.version,
        )

    def wallet_statement(self, wallet_id: str, after: int = 0, limit: int = 100) -> tuple[StatementLine, ...]:
        """The wallet's movements after position ``after`` (at most ``limit``), with the running balance."""
        _check_id(wallet_id, "wallet_id")
        if limit < 1 or limit > 1000:
            raise InvalidCommand("limit is 1 to 1000", field="limit")
        if after < 0:
            raise InvalidCommand("after must not be negative", field="after")
        uuid = ag.wallet_uuid(wallet_id)
        self._wallet(wallet_id)
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

    # -- tables ----------------------------------------------------------------------------

    def open_table(
        self,
        request_id: str,
        table_id: str,
        profile: str,
        options: dict[str, bool] | None = None,
        *,
        min_stake: int,
        max_stake: int,
        seats: int = 5,
        dealer: str | None = None,
        turn_timeout: int = 30,
        profile_version: int | None = None,
    ) -> CommandResult:
        _check_id(table_id, "table_id")
        _check_amount(min_stake, "min_stake")
        _check_amount(max_stake, "max_stake")
        _check_int(seats, "seats", 1, 64)
        _check_int(turn_timeout, "turn_timeout", 1, 3600)
        if dealer is not None:
            _check_id(dealer, "dealer")
        try:
            rules = get_profile(profile, profile_version, **(options or {}))
        except ProfileError as error:
            raise InvalidCommand(str(error), field="profile") from None
        command = tc.OpenTable(table_id, rules, min_stake, max_stake, seats, dealer, turn_timeout)
        args = {
            "table_id": table_id,
            "profile": rules.key,
            "min": min_stake,
            "max": max_stake,
            "seats": seats,
            "dealer": dealer,
            "timeout": turn_timeout,
        }

        def work(rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            try:
                self.repository.get(ag.table_uuid(table_id))
            except AggregateNotFoundError:
                pass
            else:
                raise AlreadyExists(f"table {table_id!r} already exists", table=table_id)
            events = tc.decide_table(tc.TableState(), command)
            table = TableRecord(table_id)
            table.record(events, rid)
            return [table], "table", table_id, table

        return self._execute(request_id, "open_table", args, work)

    def _table_command(
        self, request_id: str, table_id: str, name: str, args: dict[str, Any], make: Callable[[TableRecord], Any]
    ) -> CommandResult:
        _check_id(table_id, "table_id")

        def work(rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            table = self._table(table_id)
            table.record(tc.decide_table(table.state, make(table)), rid)
            return [table], "table", table_id, table

        return self._execute(request_id, name, {"table_id": table_id, **args}, work)

    def take_seat(self, request_id: str, table_id: str, player: str, seat: int) -> CommandResult:
        _check_id(player, "player")
        _check_int(seat, "seat", 1, 64)
        return self._table_command(
            request_id, table_id, "take_seat", {"player": player, "seat": seat}, lambda _t: tc.TakeSeat(player, seat)
        )

    def leave_seat(self, request_id: str, table_id: str, player: str, seat: int | None = None) -> CommandResult:
        _check_id(player, "player")
        if seat is not None:
            _check_int(seat, "seat", 1, 64)
        return self._table_command(
            request_id, table_id, "leave_seat", {"player": player, "seat": seat}, lambda _t: tc.LeaveSeat(player, seat)
        )

    def bid_for_banker(self, request_id: str, table_id: str, player: str, rounds: int) -> CommandResult:
        _check_id(player, "player")
        _check_int(rounds, "rounds", 0, 1000)

        def make(_table: TableRecord) -> tc.BidForBanker:
            capital = self._wallet(player).available
            return tc.BidForBanker(player, rounds, capital)

        return self._table_command(request_id, table_id, "bid_for_banker", {"player": player, "rounds": rounds}, make)

    def close_banker_bid(self, request_id: str, table_id: str) -> CommandResult:
        return self._table_command(request_id, table_id, "close_banker_bid", {}, lambda _t: tc.CloseBankerBid())

    def disconnect_banker(self, request_id: str, table_id: str, player: str) -> CommandResult:
        _check_id(player, "player")
        return self._table_command(
            request_id, table_id, "disconnect_banker", {"player": player}, lambda _t: tc.DisconnectBanker(player)
        )

    def checkpoint_table(self, request_id: str, table_id: str, period: str = "") -> CommandResult:
        """Record a Merkle root over the table's rounds closed since its last checkpoint (docs/audit.md)."""
        if not isinstance(period, str) or len(period) > MAX_ID:
            raise InvalidCommand(f"period has at most {MAX_ID} characters", field="period")

        def make(table: TableRecord) -> tc.RecordCheckpoint:
            rounds = self._finished_rounds(table_id, after_round_no=table.state.checkpointed_to)
            if not rounds:
                raise DomainError("no round has closed since the last checkpoint")
            root = merkle.root([merkle.leaf_hash(r, d) for _n, r, d in rounds]).hex()
            label = period or f"rounds {rounds[0][0]}-{rounds[-1][0]}"
            return tc.RecordCheckpoint(label, rounds[0][0], rounds[-1][0], len(rounds), root)

        return self._table_command(request_id, table_id, "checkpoint_table", {"period": period}, make)

    def _finished_rounds(
        self, table_id: str, after_round_no: int = 0, upto: int | None = None
    ) -> list[tuple[int, str, str]]:
        """(round number, round id, last digest) of the table's closed rounds, in order."""
        out = []
        for event in self._recorded(ag.table_uuid(table_id)):
            if event.kind != tc.RoundFinished.kind:
                continue
            number = int(event.data["round_id"].rsplit("#", 1)[1])
            if number > after_round_no and (upto is None or number <= upto):
                out.append((number, event.data["round_id"], event.data["round_digest"]))
        return out

    def inclusion_proof(self, round_id: str) -> dict[str, Any] | None:
        """The proof that a closed round is in its table's checkpoint (None until a checkpoint covers it)."""
        state = self.round_state(round_id)
        number = state.round_no
        for event in self._recorded(ag.table_uuid(state.table_id)):
            if event.kind != tc.CheckpointRecorded.kind:
                continue
            first, last = event.data["first_round_no"], event.data["last_round_no"]
            if not first <= number <= last:
                continue
            rounds = self._finished_rounds(state.table_id, first - 1, last)
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
        _check_id(table_id, "table_id")
        record = self._table(table_id)
        s = record.state
        profile = s.rules
        return TableView(
            table_id=s.table_id,
            profile=profile.name,
            profile_version=profile.version,
            options=profile.options,
            min_stake=s.min_stake,
            max_stake=s.max_stake,
            seat_count=s.seat_count,
            seats=tuple(Seat(seat=n, player=p) for n, p in s.seats),
            dealer=s.dealer,
            banker=s.banker,
            banker_rounds_left=s.tenure_left,
            bids=s.bids,
            current_round=s.round_id,
            round_no=s.round_no,
            turn_timeout=s.turn_timeout,
            house_net=s.house_net,
            commission=s.commission,
            version=record.version,
        )

    # -- rounds ----------------------------------------------------------------------------

    def start_round(self, request_id: str, table_id: str, client_seed: str = "") -> CommandResult:
        """Start the table's next round: a fresh server seed is sealed and its commitment recorded."""
        _check_id(table_id, "table_id")
        if not isinstance(client_seed, str) or len(client_seed) > MAX_CLIENT_SEED:
            raise InvalidCommand(f"client_seed has at most {MAX_CLIENT_SEED} characters", field="client_seed")

        def work(rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            table = self._table(table_id)
            state = table.state
            round_id = f"{table_id}#{state.round_no + 1}"
            funds: list[tuple[str, int]] = []
            if state.rules.banker_bid is not None:
                for player in state.players:
                    funds.append((player, self._wallet_available(player)))
            table.record(tc.decide_table(state, tc.StartRound(round_id, tuple(funds))), rid)
            state = table.state
            seed = fresh_seed()
            command = rc.OpenRound(
                round_id,
                table_id,
                state.round_no,
                state.rules,
                state.round_seats(),
                state.round_banker,
                state.min_stake,
                state.max_stake,
                commitment(seed),
                client_seed,
                state.round_no,
                SHUFFLE_ALGORITHM,
            )
            record = RoundRecord(round_id, table_id)
            record.record(decide(record.state, command), rid)
            nonce, sealed = self.vault.seal(seed, round_id)
            sealed_seed = SealedSeed(round_id, nonce, sealed, self.vault.key_id)
            return [table, record, sealed_seed], "round", round_id, record

        return self._execute(request_id, "start_round", {"table_id": table_id, "client_seed": client_seed}, work)

    def _wallet_available(self, wallet_id: str) -> int:
        try:
            return self._wallet(wallet_id).available
        except NotFound:
            return 0

    def _round_command(
        self,
        request_id: str,
        round_id: str,
        name: str,
        args: dict[str, Any],
        make: Callable[[RoundState, dict[str, Wallet]], rc.RoundCommand],
        expected_version: int | None = None,
    ) -> CommandResult:
        _check_id(round_id, "round_id")

        def work(rid: str) -> tuple[list[Aggregate], str, str, Aggregate]:
            record = self._round(round_id)
            if expected_version is not None and record.version != expected_version:
                raise WrongPhase(
                    f"round {round_id} has moved on (version {record.version}, not {expected_version})",
                    version=record.version,
                )
            wallets: dict[str, Wallet] = {}
            command = make(record.state, wallets)
            events = decide(record.state, command)
            record.record(events, rid)
            touched = self._book_money(record, events, wallets, rid)
            return [record, *touched], "round", round_id, record

        return self._execute(request_id, name, {"round_id": round_id, **args}, work)

    def _load_wallet(self, wallets: dict[str, Wallet], wallet_id: str) -> Wallet:
        wallet = wallets.get(wallet_id)
        if wallet is None:
            wallet = wallets[wallet_id] = self._wallet(wallet_id)
        return wallet

    def _book_money(
        self, record: RoundRecord, events: Iterable[re.RoundEvent], wallets: dict[str, Wallet], command_id: str
    ) -> list[Aggregate]:
        """Apply the round's money events to the wallets (and, at the close, the table's ledger)."""
        round_id = record.round_id
        touched: list[Aggregate] = []
        reserving: list[Wallet] = []
        closed: re.RoundClosed | None = None
        house_net = commission = 0
        for event in events:
            if isinstance(event, re.BetPlaced):
                wallet = self._load_wallet(wallets, event.player)
                wallet.reserve(round_id, event.reserved)
                reserving.append(wallet)
                if event.banker_reserved:
                    banker = record.state.banker_player
                    assert banker is not None
                    banker_wallet = self._load_wallet(wallets, banker)
                    banker_wallet.reserve(round_id, event.banker_reserved)
                    reserving.append(banker_wallet)
            elif isinstance(event, re.SideBetPlaced):
                wallet = self._load_wallet(wallets, event.player)
                wallet.reserve(round_id, event.reserved)
                reserving.append(wallet)
            elif isinstance(event, re.RoundSettled):
                for player, reserved, net in event.wallets:
                    self._load_wallet(wallets, player).settle(round_id, reserved, net)
                house_net, commission = event.house_net, event.commission
            elif isinstance(event, re.RoundVoided):
                for player, reserved in event.wallets:
                    self._load_wallet(wallets, player).release(round_id, reserved, "round_voided")
            elif isinstance(event, re.RoundClosed):
                closed = event
        for wallet in reserving:  # staking only: a settlement is never refused
            if wallet.balance + 2 * wallet.reserved > MAX_AMOUNT:  # a win is at most 1.2x what is reserved
                raise InvalidCommand(
                    f"wallet {wallet.wallet_id!r} is too large to stake more: its balance could pass {MAX_AMOUNT}",
                    field="stake",
                )
        touched.extend(wallets.values())
        if closed is not None:
            table = self._table(record.table_id)
            banker = record.state.banker_player
            banker_funds = self._load_wallet(wallets, banker).available if banker else None
            finish = tc.FinishRound(round_id, closed.outcome, house_net, commission, banker_funds, record.last_digest)
            table.record(tc.decide_table(table.state, finish), command_id)
            touched.append(table)
        return touched

    def place_bet(self, request_id: str, round_id: str, seat: int, player: str, stake: int) -> CommandResult:
        _check_id(player, "player")
        _check_int(seat, "seat", 1, 64)
        _check_amount(stake, "stake")

        def make(state: RoundState, wallets: dict[str, Wallet]) -> rc.RoundCommand:
            available = self._load_wallet(wallets, player).available
            banker_available = None
            if state.banker_player is not None:
                banker_available = self._load_wallet(wallets, state.banker_player).available
            return rc.PlaceBet(seat, player, stake, available, banker_available)

        return self._round_command(
            request_id, round_id, "place_bet", {"seat": seat, "player": player, "stake": stake}, make
        )

    def deal(self, request_id: str, round_id: str) -> CommandResult:
        return self._round_command(request_id, round_id, "deal", {}, lambda _s, _w: rc.Deal())

    def place_side_bet(self, request_id: str, round_id: str, seat: int, player: str) -> CommandResult:
        _check_int(seat, "seat", 1, 64)
        _check_id(player, "player")
        _check_id(player, "player")

        def make(_state: RoundState, wallets: dict[str, Wallet]) -> rc.RoundCommand:
            return rc.PlaceSideBet(seat, player, self._load_wallet(wallets, player).available)

        return self._round_command(request_id, round_id, "place_side_bet", {"seat": seat, "player": player}, make)

    def close_side_bets(self, request_id: str, round_id: str) -> CommandResult:
        return self._round_command(request_id, round_id, "close_side_bets", {}, lambda _s, _w: rc.CloseSideBets())

    def draw(self, request_id: str, round_id: str, seat: int, player: str) -> CommandResult:
        _check_int(seat, "seat", 1, 64)
        _check_id(player, "player")
        return self._round_command(
            request_id, round_id, "draw", {"seat": seat, "player": player}, lambda _s, _w: rc.Draw(seat, player)
        )

    def stay(self, request_id: str, round_id: str, seat: int, player: str) -> CommandResult:
        _check_int(seat, "seat", 1, 64)
        _check_id(player, "player")
        return self._round_command(
            request_id, round_id, "stay", {"seat": seat, "player": player}, lambda _s, _w: rc.Stay(seat, player)
        )

    def banker_reveal(
        self, request_id: str, round_id: str, seats: Iterable[int], player: str | None = None
    ) -> CommandResult:
        chosen = tuple(_check_int(seat, "seats", 1, 64) for seat in seats)
        return self._round_command(
            request_id,
            round_id,
            "banker_reveal",
            {"seats": list(chosen), "player": player},
            lambda _s, _w: rc.BankerReveal(chosen, player),
        )

    def banker_draw(self, request_id: str, round_id: str, player: str | None = None) -> CommandResult:
        return self._round_command(
            request_id, round_id, "banker_draw", {"player": player}, lambda _s, _w: rc.BankerDraw(player)
        )

    def banker_stay(self, request_id: str, round_id: str, player: str | None = None) -> CommandResult:
        return self._round_command(
            request_id, round_id, "banker_stay", {"player": player}, lambda _s, _w: rc.BankerStay(player)
        )

    def time_out_turn(self, request_id: str, round_id: str, expected_version: int | None = None) -> CommandResult:
        """The automatic action for whoever is to act. With ``expected_version`` (the turn clock), only
        if the round has not moved since: a turn that has just begun is never timed out at once."""
        args = {} if expected_version is None else {"expected_version": expected_version}
        return self._round_command(
            request_id, round_id, "time_out_turn", args, lambda _s, _w: rc.TimeOutTurn(), expected_version
        )

    def void_round(self, request_id: str, round_id: str, reason: str) -> CommandResult:
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 500:
            raise InvalidCommand("say why the round is voided (1 to 500 characters)", field="reason")
        return self._round_command(
            request_id, round_id, "void_round", {"reason": reason}, lambda _s, _w: rc.VoidRound(reason)
        )

    # -- queries ---------------------------------------------------------------------------

    def round_state(self, round_id: str) -> RoundState:
        """The round's public state (no shoe)."""
        _check_id(round_id, "round_id")
        return self._round(round_id, with_shoe=False).state

    def get_round(self, round_id: str, with_events: bool = True) -> RoundView:
        _check_id(round_id, "round_id")
        record = self._round(round_id, with_shoe=False)
        s = record.state
        profile = s.rules
        holders = dict(s.seats)
        hands = tuple(
            HandView(
                seat=seat,
                holder=holders.get(seat) if seat else s.banker_player,
                cards=tuple(map(str, cards)),
                done=seat in s.done if seat else s.banker_done,
                revealed=seat in s.revealed if seat else s.phase.value in ("showdown", "settled", "closed"),
            )
            for seat, cards in s.hands
        )
        return RoundView(
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
            bets=tuple(BetView(seat=b.seat, player=b.player, stake=b.stake, reserved=b.reserved) for b in s.bets),
            side_bets=tuple(
                BetView(seat=b.seat, player=b.player, stake=b.stake, reserved=b.reserved) for b in s.side_bets
            ),
            hands=hands,
            outcome=s.outcome,
            version=record.version,
            events=self._view_events(record.id, record.version) if with_events else (),
        )

    def round_events(self, round_id: str) -> tuple[RecordedEvent, ...]:
        _check_id(round_id, "round_id")
        recorded = self._recorded(ag.round_uuid(round_id))
        if not recorded:
            raise NotFound(f"round {round_id!r} not found", round=round_id)
        return recorded

    def round_moved_at(self, round_id: str, version: int) -> datetime | None:
        """When the round's event at ``version`` was recorded (the turn clock's start of a wait)."""
        _check_id(round_id, "round_id")
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
            domain_event = self.mapper.to_domain_event(item)
            note = _notification(item.id, domain_event)
            if note.stream == "wallet" and note.stream_id == str(domain_event.originator_id):
                note = note.model_copy(update={"stream_id": self._wallet_name(domain_event.originator_id)})
            out.append(note)
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

    # -- audits (pokdeng_service.audit) ----------------------------------------------------

    def verify_round(self, round_id: str, check_wallets: bool = True) -> Any:
        """Chain, replay, money and the wallets' and table's record of one round: an ``audit.Verdict``."""
        from pokdeng_service.audit import verification as audit

        return audit.verify_round(self, round_id, check_wallets=check_wallets)

    def replay_round(self, round_id: str) -> tuple[Any, list[re.RoundEvent]]:
        """Replay a round from its seed and recorded decisions: (verdict, replayed core events)."""
        from pokdeng_service.audit import verification as audit

        events = self.round_events(round_id)
        verdict = audit.Verdict(f"replay of round {round_id}")
        audit.check_replay(verdict, events)
        replayed = audit.replay_events(events)[0] if verdict.ok else []
        return verdict, replayed

    def export_bundle(self, round_id: str) -> dict[str, Any]:
        """The round's self-contained bundle (docs/audit.md); ``audit.bundle_bytes`` gives its file form."""
        from pokdeng_service.audit import verification as audit

        return audit.export_bundle(self, round_id)


_STREAM_OF = {
    "RoundRecord": "round",
    "TableRecord": "table",
    "Wallet": "wallet",
    "SealedSeed": "seed",
    "CommandRecord": "request",
}


def _recorded_event(item: Any) -> RecordedEvent:
    fact = fact_of(item)
    return RecordedEvent(
        position=fact.position,
        kind=fact.kind,
        data=fact.data,
        command_id=fact.command_id,
        timestamp=fact.timestamp,
        digest=fact.digest,
    )


def _notification(position: int, item: Any) -> Notification:
    owner = type(item).__qualname__.split(".")[0]
    stream = _STREAM_OF.get(owner, owner)
    stream_id = getattr(item, "stream_id", "")
    data = getattr(item, "data", None)
    if data is None:
        data = {k: v for k, v in payload_of(item).items() if k not in ("sealed", "nonce")}
        key = {"round": "round_id", "table": "table_id", "wallet": "wallet_id", "seed": "round_id"}.get(stream, "")
        stream_id = str(data.get(key, "")) if key else ""
    if stream == "request":
        data = {"request_id": data.get("request_id", "")}
    return Notification(
        position=position,
        stream=stream,
        stream_id=stream_id or str(item.originator_id),
        stream_version=item.originator_version,
        kind=getattr(item, "kind", None) or type(item).__name__,
        data=json.loads(json.dumps(data, default=str)),
        timestamp=item.timestamp.isoformat(),
    )


def _unused(*_args: object) -> None:  # keeps imports honest for type checkers
    _ = DomainError
