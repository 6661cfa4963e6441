"""What every command of the application shares: its base type (``Command``: its stream and key, its
violations, its actor and wallets, its fingerprint), its name derived from its type's, and the collector of
its violations (``Problems``). The commands themselves are in ``commands`` (wallets, tables, the log) and
``round_commands``."""

from __future__ import annotations

import functools
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import orjson

from pokdeng_core import limits
from pokdeng_core.commands import snake_case
from pokdeng_service.application.errors import FieldViolation
from pokdeng_service.store.codec import field_names

Stream = Literal["wallet", "table", "round", "log", "session"]


_snake = functools.cache(snake_case)


class _SnakeName:
    """A command's name: its type's name in snake case (``PlaceBet`` -> ``place_bet``, as the core's round
    commands are named: ``pokdeng_core.commands.snake_case``), made once per name."""

    def __get__(self, _obj: object, owner: type) -> str:
        return _snake(owner.__name__)


class Problems:
    """Collects the violations of one command."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: list[FieldViolation] = []

    def add(self, field: str, problem: str | None) -> None:
        if problem is not None:
            self.found.append(FieldViolation(field, problem))


@dataclass(frozen=True, slots=True)
class Command:
    """Base of every application command."""

    name: ClassVar[str]
    stream: ClassVar[Stream]
    secrets: ClassVar[tuple[str, ...]] = ()  # fields fingerprinted by their HMAC alone (``fingerprint``)

    @property
    def key(self) -> str:
        """The id of the stream the command addresses (its partition key)."""
        value: str = getattr(self, f"{self.stream}_id")
        return value

    @property
    def actor(self) -> str | None:
        """The player the command acts for (a player token may act only for itself), or None."""
        return None

    @property
    def wallets(self) -> tuple[str, ...]:
        """Wallets the command names, which must share its partition."""
        return ()

    def violations(self) -> tuple[FieldViolation, ...]:
        """Every bad field of the command, all at once (empty: well formed)."""
        problems = Problems()
        problems.add(f"{self.stream}_id", limits.id_problem(self.key, f"{self.stream}_id"))
        self._check(problems)
        return tuple(problems.found)

    def _check(self, problems: Problems) -> None:
        """The command's own fields (beyond its stream id)."""

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in field_names(type(self))}

    def fingerprint(self, key: bytes = b"") -> str:
        """What a repeated request id must match: the command's name and every field; a secret field (``secrets``:
        a wallet session's token) by its HMAC-SHA256 under ``key`` (the vault's), so that the stored request record
        confirms no guess of it to whoever reads the store without the vault key."""
        fields = self.fields()
        for name in self.secrets:
            fields[name] = hmac.new(key, str(fields[name]).encode(), hashlib.sha256).hexdigest()
        body = orjson.dumps([self.name, fields], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        return hashlib.sha256(body).hexdigest()


Command.name = _SnakeName()  # type: ignore[assignment]  # a descriptor: each type its own name


def check_player(problems: Problems, value: str | None, *, required: bool = True, field: str = "player") -> None:
    if value is None and not required:
        return
    problems.add(field, limits.id_problem(value, field, required=required))
