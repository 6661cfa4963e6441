"""Who sends a command or a query: a role, and for a player the player id it is bound to.

The API authenticates a call once and hands the ``Principal`` on; the application decides
with it what only the record can tell (whose seat, wallet or banker's hand a command concerns).
Code inside the service that acts for itself (the turn clock, scripts, tests) passes ``SYSTEM``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    OPERATOR = "operator"
    PLAYER = "player"
    AUDITOR = "auditor"


class TokenConfigError(ValueError):
    """A token (or token file) that cannot be used."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a role, and for a player token the player id it is bound to."""

    role: Role
    player: str | None = None
    name: str = ""
    internal: bool = False  # the service itself (its request ids live where no client can write)

    def __post_init__(self) -> None:
        if (self.role is Role.PLAYER) != bool(self.player):
            raise TokenConfigError("a player token names its player; operator and auditor tokens name none")

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR

    @property
    def is_player(self) -> bool:
        return self.role is Role.PLAYER

    def may_act_for(self, player: str | None) -> bool:
        """Whether this caller may act for (or read what belongs to) ``player``."""
        if self.role is Role.OPERATOR:
            return True
        if self.role is Role.PLAYER:
            return bool(player) and player == self.player
        return False

    @property
    def scope(self) -> str:
        """Where this caller's request ids live: its own namespace, so no caller can take another's ids.
        Clients get ``<role>:<player or token name>``; the service's own principals share ``internal``
        (a turn clock on any replica, scripts and the CLI: one namespace that no token reaches)."""
        if self.internal:
            return "internal"
        return f"{self.role.value}:{self.player or self.name}"

    @property
    def actor(self) -> str:
        """Who this is, as the record names the sender of an operator command (``round_voided.by``):
        ``<role>:<token name>`` (``operator:ops-desk``), the role alone for an unnamed token, and
        ``service:<name>`` for the service itself (``service:turn-clock``)."""
        if self.internal:
            return f"service:{self.name}"
        who = self.player or self.name
        return f"{self.role.value}:{who}" if who else self.role.value

    def describe(self) -> str:
        who = f"player {self.player!r}" if self.role is Role.PLAYER else f"an {self.role.value}"
        return who + (f" ({self.name})" if self.name else "")


SYSTEM = Principal(Role.OPERATOR, name="system", internal=True)
"""The service acting for itself (the CLI, embedding code, scripts)."""
TURN_CLOCK = Principal(Role.OPERATOR, name="turn-clock", internal=True)
"""The turn clock: its request ids (``timeout:<round>:<version>``) are its own, out of every client's reach."""
