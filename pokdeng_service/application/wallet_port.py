"""The wallet port: how the round and table handlers reach a player's money, whoever holds it.

The handlers (``application.rounds``, ``application.tables``) decide with the pure core and then
book the money of the events decided through the application's port (``port_of(attempt)``):
``reserve`` a stake (``bet_placed``, ``side_bet_placed``), ``settle`` a wallet's reservation and
net (``round_settled``), ``release`` a reservation (``round_voided``); ``touched`` lists what the
booking changed, saved in the command's one transaction. The funds the core checks come from the
port too. The round's own events are the same whichever adapter books them.

Two adapters: ``InternalPort`` (here: the event-sourced ``Wallet`` aggregates of the store, the
behaviour pokdeng always had) and ``wallet.remote.RemotePort`` (the platform's wallet: a bet's
money is debited before its ``bet_placed`` is recorded, and the booking records the transactions
in the round's outbox). The one pipeline (``pipeline.execute``) asks the port for a step ``before`` a
command (the remote one: a stake's debits, taken before the stake is recorded) and tells it ``after`` one
(the remote one: a closed round's credits and rollbacks sent at once): docs/wallet.md.

A round's money is booked only through the adapter that took its stakes: a round with an outbox is
the platform's, and ``InternalPort`` refuses to book it (``WalletAdapterMismatch``); a round without
one is the store's wallets', and ``RemotePort`` books it on them (``STORE_WALLETS``). The store's
wallets are never settled or released for a round they hold no reservation of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from eventsourcing.domain import Aggregate

from pokdeng_core import limits
from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.attempt import Attempt, Record
from pokdeng_service.application.errors import WalletAdapterMismatch
from pokdeng_service.store.aggregates import Wallet, transactions_uuid

if TYPE_CHECKING:
    from pokdeng_service.application.commanding import Command
    from pokdeng_service.application.views import CommandResult
    from pokdeng_service.store.aggregates import RoundRecord

Stake = tuple[str, int, str]
"""What a reservation is for: (purpose, seat, bettor); purpose bet, cover (a player-banker's) or side."""


class Prepared(Protocol):
    """The money a port's step requested for a command before it is recorded (a stake's debits on the platform's
    wallet): ``saved`` (what records the request) is saved before any call; ``send`` makes the calls and raises
    why the command may not be recorded (the platform refused, or did not answer); ``close`` ends the step, the
    command recorded or not (what was taken for a command not recorded is given back); ``abandon``: the request
    was never saved (another writer's conflict), so nothing was sent."""

    @property
    def saved(self) -> tuple[Aggregate, ...]: ...

    def send(self) -> None: ...
    def close(self, recorded: bool) -> None: ...
    def abandon(self) -> None: ...


Step = Callable[[Attempt, Any], Prepared | None]
"""A port's step before a command: what it requests, on what the attempt loaded; None: nothing to take first."""


class WalletPort(Protocol):
    """Where a round's money is booked (``InternalPort``, ``wallet.remote.RemotePort``)."""

    remote: bool  # whether the balances are the platform's (a wallet is then bound to no partition)

    def before(self, command: Command) -> Step | None:
        """The port's step that must take ``command``'s money before the command is recorded, or None."""
        ...

    def after(self, app: Any, result: CommandResult) -> None:
        """What the port does once a command is answered (the platform's calls a closed round needs)."""
        ...

    def stake_funds(self, attempt: Attempt, round_id: str) -> int | None:
        """What the core may count on for a stake in the round, or None: the bettor's ``Wallet`` of the store
        says (its available funds, and its currency is checked)."""
        ...

    def funds(self, attempt: Attempt, player: str, currency: str, missing_ok: bool = False) -> int:
        """A player's available funds in ``currency`` (a banker bid's capital, a room's seat check); an
        unknown wallet is ``NotFound``, or 0 with ``missing_ok``."""
        ...

    def closing_funds(self, attempt: Attempt, record: RoundRecord, player: str) -> int | None:
        """A player-banker's funds once the round's settlement is booked (None: not known here)."""
        ...

    def reserve(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, stake: Stake) -> None: ...
    def settle(self, attempt: Attempt, record: RoundRecord, player: str, reserved: int, net: int) -> None: ...
    def release(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, reason: str) -> None: ...
    def touched(self, attempt: Attempt) -> list[Aggregate]:
        """What the booking changed (saved with the round, in the command's transaction)."""
        ...


class StoreWallets:
    """The booking on the store's ``Wallet`` aggregates, with no look at the platform's record: ``InternalPort``
    books through it once it has found the round is not the platform's; ``RemotePort`` books through it a
    round that its outbox does not hold (one opened under the internal wallets). A settlement or release
    must find the wallet's reservation for the round to be what the round says it reserved: a wallet that
    reserved nothing for the round is never paid its net (``WalletAdapterMismatch``)."""

    def closing_funds(self, attempt: Attempt, record: RoundRecord, player: str) -> int | None:
        return attempt.wallet(player).available

    def reserve(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, stake: Stake) -> None:
        wallet = attempt.wallet(player)
        wallet.reserve(record.round_id, amount)
        if wallet.balance + 2 * wallet.reserved > limits.MAX_AMOUNT:  # a win is at most 1.2x what is reserved
            raise InvalidCommand(
                f"wallet {wallet.wallet_id!r} is too large to stake more: its balance could pass {limits.MAX_AMOUNT}",
                field="stake",
            )

    def settle(self, attempt: Attempt, record: RoundRecord, player: str, reserved: int, net: int) -> None:
        self._reservation(attempt, record, player, reserved).settle(record.round_id, reserved, net)

    def release(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, reason: str) -> None:
        self._reservation(attempt, record, player, amount).release(record.round_id, amount, reason)

    def _reservation(self, attempt: Attempt, record: RoundRecord, player: str, amount: int) -> Wallet:
        """The player's wallet, which must hold ``amount`` reserved for the round."""
        wallet = attempt.wallet(player)
        held = wallet.reservations.get(record.round_id, 0)
        if held != amount:
            raise WalletAdapterMismatch(
                f"wallet {player!r} holds {held} reserved for round {record.round_id!r}, and the round books "
                f"{amount} of its stakes: they are not on the store's wallets (a round whose stakes another wallet "
                'adapter took is finished only by it: docs/wallet.md, "Switching adapters")',
                round_id=record.round_id,
                wallet=player,
                adapter="internal",
            )
        return wallet


STORE_WALLETS = StoreWallets()


class InternalPort:
    """The store's own wallets: a stake reserves funds on the bettor's ``Wallet``, the settlement releases
    the reservation and applies the net, a void releases it (docs/events.md, "Wallet stream").

    A round whose stakes the platform's wallet took (it has a ``WalletTransactions`` outbox: a server on
    ``--wallet remote`` placed or requested a debit in it) is never booked here: a stake, a settlement or a
    release of it is refused with ``WalletAdapterMismatch`` (serve it with ``--wallet remote`` to finish it;
    ``cli.main`` refuses to start on the internal wallets while such rounds are open, docs/wallet.md)."""

    remote = False

    def before(self, command: Command) -> Step | None:
        return None  # (the money moves in the command's own transaction)

    def after(self, app: Any, result: CommandResult) -> None:
        return None

    def stake_funds(self, attempt: Attempt, round_id: str) -> int | None:
        refuse_platform_round(attempt, round_id)
        return None

    def funds(self, attempt: Attempt, player: str, currency: str, missing_ok: bool = False) -> int:
        return attempt.available(player) if missing_ok else attempt.wallet(player).available

    def closing_funds(self, attempt: Attempt, record: RoundRecord, player: str) -> int | None:
        return STORE_WALLETS.closing_funds(attempt, record, player)

    def reserve(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, stake: Stake) -> None:
        refuse_platform_round(attempt, record.round_id)
        STORE_WALLETS.reserve(attempt, record, player, amount, stake)

    def settle(self, attempt: Attempt, record: RoundRecord, player: str, reserved: int, net: int) -> None:
        refuse_platform_round(attempt, record.round_id)
        STORE_WALLETS.settle(attempt, record, player, reserved, net)

    def release(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, reason: str) -> None:
        refuse_platform_round(attempt, record.round_id)
        STORE_WALLETS.release(attempt, record, player, amount, reason)

    def touched(self, attempt: Attempt) -> list[Aggregate]:
        return list(attempt.wallets())


_CHECKED = "wallet-tx-checked"  # the attempt's key of the round's look at its outbox (once an attempt)


_KNOWN_ROUNDS = 4096  # rounds remembered to hold no platform transactions (a single writer's)


def platform_holds(attempt: Attempt, round_id: str) -> bool:
    """Whether the round's money is the platform's: it has a ``WalletTransactions`` outbox (a server on the
    platform's wallets requested a debit for it). The same rule ``RemotePort`` books by; looked at once an
    attempt (one row read)."""
    key = (_CHECKED, round_id)
    found: Any = attempt.loaded.get(key)
    if found is None:
        app: Any = attempt.app
        known = app.store_wallet_rounds if getattr(app, "single_writer", False) and not app.wallet_port.remote else None
        if known is not None and round_id in known:
            return False  # (this server, the one writer, books the store's wallets: no outbox can appear)
        found = bool(app.recorder.select_events(transactions_uuid(round_id), limit=1))
        attempt.loaded[key] = found  # (not an aggregate: every reader of ``loaded`` selects by type)
        if known is not None and not found:
            known[round_id] = None
            if len(known) > _KNOWN_ROUNDS:
                known.popitem(last=False)
    return bool(found)


def refuse_platform_round(attempt: Attempt, round_id: str) -> None:
    """``WalletAdapterMismatch`` if the round's stakes are the platform's (this server books the store's)."""
    if platform_holds(attempt, round_id):
        raise WalletAdapterMismatch(
            f"round {round_id!r} holds stakes debited on the platform's wallet (its wallet transactions are "
            "recorded), and this server books the store's own wallets (--wallet internal): its stakes are "
            "settled, voided and released only on the platform's wallet. Serve it with --wallet remote "
            '--wallet-url URL to finish it (docs/wallet.md, "Switching adapters")',
            round_id=round_id,
            held_by="remote",
            adapter="internal",
        )


INTERNAL = InternalPort()


def port_of(holder: Attempt | Record) -> WalletPort:
    """The port of an application, or of an attempt's (the internal wallets unless the deployment chose the
    platform's)."""
    app = holder.app if isinstance(holder, Attempt) else holder
    port: WalletPort = getattr(app, "wallet_port", INTERNAL)
    return port


__all__ = [
    "INTERNAL",
    "STORE_WALLETS",
    "InternalPort",
    "Prepared",
    "Stake",
    "Step",
    "StoreWallets",
    "WalletPort",
    "platform_holds",
    "port_of",
    "refuse_platform_round",
]
