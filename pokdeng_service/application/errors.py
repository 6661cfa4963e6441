"""Service-level errors, beside the core's domain errors (pokdeng_core.errors)."""

from __future__ import annotations

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
