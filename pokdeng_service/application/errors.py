"""Service-level errors, beside the core's domain errors (pokdeng_core.errors)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pokdeng_core.errors import DomainError, InvalidCommand


class NotFound(DomainError):
    """An unknown table, round or wallet id."""

    code = "not_found"


class Conflict(DomainError):
    """Concurrent writers kept conflicting: the command was retried and still could not be saved."""

    code = "conflict"


class DuplicateRequest(InvalidCommand):
    """A request id already used for a different command."""

    code = "duplicate_request"


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
