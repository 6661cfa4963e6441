"""Domain errors: why a command was refused. A refused command records nothing."""

from __future__ import annotations


class DomainError(Exception):
    """A command that does not fit the rules, the phase, the seat or the funds.

    ``code`` is a stable machine-readable reason; the message says what and why.
    """

    code = "rule_violation"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidCommand(DomainError):
    """Malformed input: a bad amount, seat number, card or option."""

    code = "invalid_argument"

    def __init__(self, message: str, field: str = "", **details: object) -> None:
        super().__init__(message, **details)
        self.field = field


class WrongPhase(DomainError):
    """The command does not fit the round's (or table's) current phase."""

    code = "wrong_phase"


class NotYourTurn(DomainError):
    """Another hand is to act, or the actor does not hold the hand."""

    code = "not_your_turn"


class UnknownSeat(DomainError):
    code = "unknown_seat"


class InsufficientFunds(DomainError):
    """A stake the wallet (or the player-banker's wallet) cannot cover."""

    code = "insufficient_funds"

    def __init__(self, message: str, *, required: int, available: int, wallet: str = "") -> None:
        super().__init__(message, required=required, available=available, wallet=wallet)
        self.required = required
        self.available = available
        self.wallet = wallet


class SealedShoe(DomainError):
    """Cards are needed but the round's shoe was not attached (the server seed is missing)."""

    code = "sealed_shoe"


class CurrencyMismatch(DomainError):
    """A wallet stakes at a table of another currency (every stake is in its table's currency)."""

    code = "currency_mismatch"
