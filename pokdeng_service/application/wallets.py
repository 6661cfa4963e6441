"""Handlers of the wallet commands: open a wallet, deposit, withdraw; a player's session with the platform's wallet."""

from __future__ import annotations

from pokdeng_core import limits
from pokdeng_core.errors import InsufficientFunds, InvalidCommand
from pokdeng_service.application.attempt import Attempt
from pokdeng_service.application.commands import Deposit, OpenWallet, OpenWalletSession, Withdraw
from pokdeng_service.application.errors import AlreadyExists, NotFound
from pokdeng_service.application.pipeline import Outcome, handler
from pokdeng_service.store.aggregates import Wallet
from pokdeng_service.store.sessions import WalletSessions


def _outcome(wallet: Wallet) -> Outcome:
    return Outcome((wallet,), wallet, "wallet", wallet.wallet_id)


@handler(OpenWallet)
def open_wallet(attempt: Attempt, command: OpenWallet) -> Outcome:
    try:
        attempt.wallet(command.wallet_id)
    except NotFound:
        return _outcome(Wallet(command.wallet_id, command.currency))
    raise AlreadyExists(f"wallet {command.wallet_id!r} already exists", wallet=command.wallet_id)


@handler(Deposit)
def deposit(attempt: Attempt, command: Deposit) -> Outcome:
    wallet = attempt.wallet(command.wallet_id)
    if wallet.balance + command.amount + 2 * wallet.reserved > limits.MAX_AMOUNT:  # room for what stakes may win
        raise InvalidCommand("the balance would overflow", field="amount")
    wallet.deposit(command.amount, attempt.request_id)
    return _outcome(wallet)


@handler(Withdraw)
def withdraw(attempt: Attempt, command: Withdraw) -> Outcome:
    wallet = attempt.wallet(command.wallet_id)
    if command.amount > wallet.available:
        raise InsufficientFunds(
            f"wallet {command.wallet_id!r} has {wallet.available} available (reserved funds cannot be withdrawn)",
            required=command.amount,
            available=wallet.available,
            wallet=command.wallet_id,
        )
    wallet.withdraw(command.amount, attempt.request_id)
    return _outcome(wallet)


@handler(OpenWalletSession)
def open_wallet_session(attempt: Attempt, command: OpenWalletSession) -> Outcome:
    """A new session of the player (its token sealed with the vault key): the one new stakes use."""
    book = attempt.app.load_sessions(command.player) or WalletSessions(command.player)
    book.start(attempt.app.vault, command.token, command.currency, command.game_code, attempt.request_id)
    return Outcome((book,), book, "session", command.player)
