"""Service-level errors, beside the core's domain errors (pokdeng_core.errors)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from pokdeng_core.errors import DomainError, InvalidCommand, WrongPhase

integrity_log = logging.getLogger("pokdeng.integrity")


class NotFound(DomainError):
    """An unknown table, round or wallet id."""

    code = "not_found"


class TooManyContributions(DomainError):
    """The contributor has sent the round the most contributions to its client seed that one may
    (``limits.MAX_CONTRIBUTIONS``): the service's bound on a round's size, not a rule of the game (a
    recorded round replays whatever it holds)."""

    code = "too_many_contributions"


class TooManySeatings(DomainError):
    """The player has taken the most seats at the table that one may between two of its rounds
    (``limits.MAX_SEATINGS``): the service's bound on a table's stream, not a rule of the game."""

    code = "too_many_seatings"


class BankerCannotCover(WrongPhase):
    """A room's StartRound found that its banker cannot cover the round: the role ended (recorded on the table as
    ``banker_role_ended``, reason ``insufficient_funds``, by the service's own request: ``pipeline.Refused``) and
    no round opened; the room holds a banker bid next, and the caller's request id is still unused."""

    code = "banker_cannot_cover"


class Conflict(DomainError):
    """Concurrent writers kept conflicting: the command was retried and still could not be saved."""

    code = "conflict"


class DuplicateRequest(InvalidCommand):
    """A request id already used for a different command."""

    code = "duplicate_request"


class StreamForged(DomainError):
    """A stored stream that is not what it claims (docs/audit.md, "Streams are who they say they are"):
    its uuid is not the uuid of the id it names, its hash chain does not recompute, its table never
    opened it, or its sealed seed is not its own. It is refused, never acted on; ``stream_forged``
    logs the alert. The API reports it as DATA_LOSS, reason ``STREAM_FORGED``."""

    code = "stream_forged"


def stream_forged(stream: str, ident: str, uuid: UUID | str, problem: str) -> StreamForged:
    """The error refusing stream ``uuid``, read as ``stream`` ``ident``, with its alert logged (logger
    ``pokdeng.integrity``, CRITICAL, naming the stream)."""
    integrity_log.critical(
        "STREAM FORGED: %s stream %s, read as %r, refused: %s",
        stream,
        uuid,
        ident,
        problem,
        extra={"forged_stream": str(uuid)},
    )
    return StreamForged(
        f"{stream} {ident!r} is refused: its stored stream {uuid} is not what it claims ({problem})",
        stream=stream,
        id=ident,
        uuid=str(uuid),
    )


class NoReadModels(DomainError):
    """A List method on a server that keeps no read models (they answer lists)."""

    code = "no_read_models"


class AlreadyExists(DomainError):
    """Opening a table or wallet whose id is taken."""

    code = "already_exists"


@dataclass(frozen=True)
class FieldViolation:
    """One bad field of a command or request, and what is wrong with it."""

    field: str
    description: str


class RequestInvalid(InvalidCommand):
    """Every field violation of one command or request, reported together."""

    def __init__(self, violations: Iterable[FieldViolation]) -> None:
        self.violations = tuple(violations)
        message = "; ".join(f"{v.field}: {v.description}" for v in self.violations) or "invalid request"
        super().__init__(message, field=self.violations[0].field if self.violations else "")


class PermissionDenied(Exception):
    """The caller may not do this (another player's seat, wallet or banker's hand; a role that may not call)."""

    reason = "PERMISSION_DENIED"

    def __init__(self, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = metadata


class FundsWithheld(DomainError):
    """Another wallet (a player-banker's) cannot cover a stake; shown to a player without its funds."""

    code = "insufficient_funds"


# -- the platform's wallet (docs/wallet.md) --


class WalletRefused(DomainError):
    """The platform refused a stake's debit for a reason other than funds (a reused tx id, a limit)."""

    code = "wallet_refused"


class WalletUnavailable(DomainError):
    """The platform's wallet did not answer in time; a stake's debit is rolled back (retry the command)."""

    code = "wallet_unavailable"


class WalletAdapterMismatch(DomainError):
    """The round's stakes are held by the other wallet adapter than the one this server books (a round whose
    debits are the platform's on a server of the internal wallets, docs/wallet.md "Switching adapters"):
    FAILED_PRECONDITION, reason ``WALLET_ADAPTER_MISMATCH``, metadata ``round_id``, ``adapter`` and ``held_by`` (or
    ``wallet``: a store wallet that holds no reservation of the round it would settle)."""

    code = "wallet_adapter_mismatch"


class WalletSessionMissing(DomainError):
    """A stake or a balance of a player who has no session with the platform's wallet (``--wallet hub88``: no
    ``OpenWalletSession`` since the game's launch): nothing is sent to the platform. FAILED_PRECONDITION, reason
    ``WALLET_SESSION_MISSING``, metadata ``player``: hand pokdeng the player's session, then retry."""

    code = "wallet_session_missing"


class WalletSessionRejected(DomainError):
    """The platform refused the player's session (Hub88: ``RS_ERROR_INVALID_TOKEN``, ``RS_ERROR_TOKEN_EXPIRED``):
    the stake's debit is rolled back, as Hub88 asks. FAILED_PRECONDITION, reason ``WALLET_SESSION_REJECTED``,
    metadata ``player``, ``status``: the game must be launched again and its new session handed to pokdeng."""

    code = "wallet_session_rejected"
