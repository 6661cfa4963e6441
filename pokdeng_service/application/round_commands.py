"""The commands of a round, as data (the service's side of ``pokdeng_core.commands``): each names the round,
checks its own fields, and names the player it acts for and the wallets it touches. ``commands`` lists
them in ``COMMANDS``; their handlers are in ``rounds``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pokdeng_core import limits
from pokdeng_service.application.commanding import Command, Problems, Stream, check_player
from pokdeng_service.store.codec import field_names


@dataclass(frozen=True, slots=True)
class RoundCommand(Command):
    """A command to one round (its stream key is the round id; its partition its table's)."""

    stream: ClassVar[Stream] = "round"
    round_id: str


@dataclass(frozen=True, slots=True)
class _SeatCommand(RoundCommand):
    seat: int
    player: str

    @property
    def actor(self) -> str | None:
        return self.player

    def _check(self, problems: Problems) -> None:
        problems.add("seat", limits.seat_problem(self.seat, "seat"))
        check_player(problems, self.player)


@dataclass(frozen=True, slots=True)
class PlaceBet(_SeatCommand):
    """A stake on a seat; with ``client_seed``, the bettor's contribution to the round's client seed too."""

    stake: int
    client_seed: str | None = None

    @property
    def wallets(self) -> tuple[str, ...]:
        return (self.player,)

    def _check(self, problems: Problems) -> None:
        super(PlaceBet, self)._check(problems)
        problems.add("stake", limits.amount_problem(self.stake, "stake"))
        if self.client_seed is not None:
            problems.add("client_seed", limits.client_seed_problem(self.client_seed, required=True))

    def fields(self) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in field_names(type(self))}
        if values["client_seed"] is None:  # (the fingerprint of a bet without one is what it always was)
            del values["client_seed"]
        return values


@dataclass(frozen=True, slots=True)
class ContributeSeed(RoundCommand):
    """A contribution to the round's client seed during betting: a bettor's (or the player-banker's) own,
    or the platform's (``player`` None or empty: the operator). The last contribution of each
    contributor before the deal counts (docs/shuffle.md section 13)."""

    player: str | None
    client_seed: str

    @property
    def contributor(self) -> str | None:
        return self.player or None

    @property
    def actor(self) -> str | None:
        return self.contributor

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.player, required=False)
        problems.add("client_seed", limits.client_seed_problem(self.client_seed, required=True))


@dataclass(frozen=True, slots=True)
class PlaceSideBet(_SeatCommand):
    @property
    def wallets(self) -> tuple[str, ...]:
        return (self.player,)


@dataclass(frozen=True, slots=True)
class Draw(_SeatCommand):
    pass


@dataclass(frozen=True, slots=True)
class Stay(_SeatCommand):
    pass


@dataclass(frozen=True, slots=True)
class Deal(RoundCommand):
    pass


@dataclass(frozen=True, slots=True)
class CloseSideBets(RoundCommand):
    pass


@dataclass(frozen=True, slots=True)
class BankerCommand(RoundCommand):
    """The banker's hand: the operator (house banker, or for a player-banker) or the player-banker itself."""

    @property
    def banker(self) -> str | None:
        value: str | None = getattr(self, "player", None)
        return value or None

    @property
    def actor(self) -> str | None:
        return self.banker

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.banker or None, required=False)


@dataclass(frozen=True, slots=True)
class BankerReveal(BankerCommand):
    seats: tuple[int, ...] = ()
    player: str | None = None

    def _check(self, problems: Problems) -> None:
        seats = self.seats
        if not isinstance(seats, tuple | list) or not seats:
            problems.add("seats", "name one or more seats to reveal")
        elif len(seats) > limits.MAX_SEATS:  # one violation, not one per seat: the answer stays small
            problems.add("seats", f"name at most {limits.MAX_SEATS} seats to reveal")
        else:
            for i, seat in enumerate(seats):
                problems.add(f"seats[{i}]", limits.seat_problem(seat, f"seats[{i}]"))
            if len(set(seats)) != len(seats):
                problems.add("seats", "the seats must be distinct")
        super(BankerReveal, self)._check(problems)

    def fields(self) -> dict[str, Any]:
        return {"round_id": self.round_id, "seats": list(self.seats), "player": self.player}


@dataclass(frozen=True, slots=True)
class BankerDraw(BankerCommand):
    player: str | None = None


@dataclass(frozen=True, slots=True)
class BankerStay(BankerCommand):
    player: str | None = None


@dataclass(frozen=True, slots=True)
class TimeOutTurn(RoundCommand):
    """The automatic action for whoever is to act; with ``expected_version``, only if the round has not moved."""

    expected_version: int | None = None

    def _check(self, problems: Problems) -> None:
        if self.expected_version is not None:
            problems.add(
                "expected_version",
                limits.int_problem(self.expected_version, "expected_version", 1, limits.MAX_POSITION),
            )

    def fields(self) -> dict[str, Any]:
        values: dict[str, Any] = {"round_id": self.round_id}
        if self.expected_version is not None:
            values["expected_version"] = self.expected_version
        return values


@dataclass(frozen=True, slots=True)
class VoidRound(RoundCommand):
    reason: str

    def _check(self, problems: Problems) -> None:
        problems.add(
            "reason", limits.text_problem(self.reason, "reason", most=limits.MAX_REASON, required=True, shown=True)
        )
