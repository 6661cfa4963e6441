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
in the round's outbox). The port also runs each command (``handle``): the remote one places a
stake in two steps around the debit (docs/wallet.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from eventsourcing.domain import Aggregate

from pokdeng_core import limits
from pokdeng_core.errors import InvalidCommand

if TYPE_CHECKING:
    from pokdeng_service.application.commands import Command
    from pokdeng_service.application.pipeline import Attempt
    from pokdeng_service.application.principal import Principal
    from pokdeng_service.application.views import CommandResult
    from pokdeng_service.store.aggregates import RoundRecord

Stake = tuple[str, int, str]
"""What a reservation is for: (purpose, seat, bettor); purpose bet, cover (a player-banker's) or side."""


class WalletPort(Protocol):
    """Where a round's money is booked (``InternalPort``, ``wallet.remote.RemotePort``)."""

    remote: bool  # whether the balances are the platform's (a wallet is then bound to no partition)

    def handle(self, app: Any, principal: Principal, request_id: str, command: Command) -> CommandResult:
        """Run a command through the pipeline (``application.pipeline.execute``), with the port's money steps."""
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


class InternalPort:
    """The store's own wallets: a stake reserves funds on the bettor's ``Wallet``, the settlement releases
    the reservation and applies the net, a void releases it (docs/events.md, "Wallet stream")."""

    remote = False

    def handle(self, app: Any, principal: Principal, request_id: str, command: Command) -> CommandResult:
        from pokdeng_service.application.pipeline import execute

        return execute(app, principal, request_id, command)

    def stake_funds(self, attempt: Attempt, round_id: str) -> int | None:
        return None

    def funds(self, attempt: Attempt, player: str, currency: str, missing_ok: bool = False) -> int:
        return attempt.available(player) if missing_ok else attempt.wallet(player).available

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
        attempt.wallet(player).settle(record.round_id, reserved, net)

    def release(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, reason: str) -> None:
        attempt.wallet(player).release(record.round_id, amount, reason)

    def touched(self, attempt: Attempt) -> list[Aggregate]:
        return list(attempt.wallets())


INTERNAL = InternalPort()


def port_of(attempt: Attempt) -> WalletPort:
    """The port of the attempt's application (the internal wallets unless the deployment chose the platform's)."""
    port: WalletPort = getattr(attempt.app, "wallet_port", INTERNAL)
    return port


__all__ = ["INTERNAL", "InternalPort", "Stake", "WalletPort", "port_of"]
