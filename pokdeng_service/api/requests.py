"""Checks of query requests (commands check themselves: ``Command.violations``), on the shared limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pokdeng_core import limits
from pokdeng_service.application.errors import FieldViolation, RequestInvalid

T = TypeVar("T")


class Fields:
    """Collects the field violations of one request; ``done()`` raises them all together."""

    def __init__(self) -> None:
        self.violations: list[FieldViolation] = []

    def bad(self, field: str, description: str | None) -> None:
        if description is not None:
            self.violations.append(FieldViolation(field, description))

    def ident(self, field: str, value: str, *, required: bool = True) -> str:
        self.bad(field, limits.id_problem(value, field, required=required))
        return value

    def seat(self, field: str, value: int, *, banker: bool = False) -> int:
        self.bad(field, limits.seat_problem(value, field, banker=banker))
        return value

    def between(self, field: str, value: int, low: int, high: int, default: int | None = None) -> int:
        """``value`` in ``low..high``; 0 stands for ``default`` where one is given."""
        if value == 0 and default is not None:
            return default
        if not low <= value <= high:
            self.bad(field, f"{field} must be {low} to {high}" + (" (0: the default)" if default is not None else ""))
        return value

    def page_size(self, value: int, most: int, default: int) -> int:
        """A page size: 0 is ``default``, more than ``most`` is ``most`` (AIP-158), negative is refused."""
        if value < 0:
            self.bad("page_size", "page_size must not be negative")
            return default
        return default if value == 0 else min(value, most)

    def choice(self, field: str, value: int, known: Mapping[int, T]) -> T | None:
        """An enum filter's meaning: 0 (unspecified) is None, no filter; a number the API does not define
        is refused, so that a client built on a newer proto never gets unfiltered data silently."""
        if value == 0:
            return None
        found = known.get(value)
        if found is None:
            self.bad(field, f"{field} {value} is not one of its enum's values")
        return found

    def done(self) -> None:
        if self.violations:
            raise RequestInvalid(self.violations)
