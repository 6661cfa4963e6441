"""The application's commands, as data: one frozen type per operation.

A command names the stream it addresses (``stream`` and ``key``: a wallet, a table or a
round), lists every bad field at once (``violations``), names the player it acts for
(``actor``: a player token may send it only for itself) and the wallets it touches
(``wallets``: they must live in the command's partition), and gives the idempotency
fingerprint of a request (``fingerprint``: its name and fields). ``PokdengApp.handle``
runs any of them; the handler of each type is in ``wallets``, ``tables`` or ``rounds``.

Adding a command: its type here, its handler, its RPC and its tests (docs/architecture.md, "Adding a command").
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, Literal

import orjson

from pokdeng_core import currencies, limits
from pokdeng_core.commands import snake_case
from pokdeng_core.profiles import PROFILE_NAMES
from pokdeng_service.application.errors import FieldViolation
from pokdeng_service.store.codec import field_names

Stream = Literal["wallet", "table", "round", "log", "session"]


_snake = functools.cache(snake_case)


class _SnakeName:
    """A command's name: its type's name in snake case (``PlaceBet`` -> ``place_bet``, as the core's round
    commands are named: ``pokdeng_core.commands.snake_case``), made once per name."""

    def __get__(self, _obj: object, owner: type) -> str:
        return _snake(owner.__name__)


class _Problems:
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
        problems = _Problems()
        problems.add(f"{self.stream}_id", limits.id_problem(self.key, f"{self.stream}_id"))
        self._check(problems)
        return tuple(problems.found)

    def _check(self, problems: _Problems) -> None:
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


def _player(problems: _Problems, value: str | None, *, required: bool = True, field: str = "player") -> None:
    if value is None and not required:
        return
    problems.add(field, limits.id_problem(value, field, required=required))


# --- wallets ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenWallet(Command):
    stream: ClassVar[Stream] = "wallet"
    wallet_id: str
    currency: str = currencies.DEFAULT  # ISO 4217, with minor units

    def _check(self, problems: _Problems) -> None:
        problems.add("wallet_id", limits.new_id_problem(self.wallet_id, "wallet_id"))
        problems.add("currency_code", currencies.currency_problem(self.currency))


@dataclass(frozen=True, slots=True)
class _MoneyMovement(Command):
    stream: ClassVar[Stream] = "wallet"
    wallet_id: str
    amount: int

    def _check(self, problems: _Problems) -> None:
        problems.add("amount", limits.amount_problem(self.amount, "amount"))


@dataclass(frozen=True, slots=True)
class Deposit(_MoneyMovement):
    """Money paid into a wallet."""


@dataclass(frozen=True, slots=True)
class Withdraw(_MoneyMovement):
    """Money paid out of a wallet (at most what is available)."""


@dataclass(frozen=True, slots=True)
class OpenWalletSession(Command):
    """A player's session with the platform's wallet, handed over by the game server that received the game's
    launch (``--wallet hub88``: Hub88's game session ``token`` of ``/game/url``, its currency and game code): the
    player's stakes and balances use it from now on (``store.sessions``, docs/wallet.md)."""

    stream: ClassVar[Stream] = "session"
    secrets: ClassVar[tuple[str, ...]] = ("token",)
    player: str
    token: str = field(repr=False)  # (a secret: sealed with the vault key, never shown)
    currency: str = currencies.DEFAULT
    game_code: str = ""

    @property
    def key(self) -> str:
        return self.player

    def violations(self) -> tuple[FieldViolation, ...]:
        problems = _Problems()
        _player(problems, self.player)
        self._check(problems)
        return tuple(problems.found)

    def _check(self, problems: _Problems) -> None:
        problems.add("token", limits.text_problem(self.token, "token", most=255, required=True, shown=True))
        problems.add("currency_code", currencies.currency_problem(self.currency))
        problems.add("game_code", limits.id_problem(self.game_code, "game_code", required=False))


# --- tables -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenTable(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    profile: str
    options: dict[str, bool] | None = None
    _: KW_ONLY
    min_stake: int
    max_stake: int
    seats: int = 5
    dealer: str | None = None
    turn_timeout: int = limits.DEFAULT_TURN_TIMEOUT
    profile_version: int | None = None
    currency: str = currencies.DEFAULT  # ISO 4217, with minor units: every stake at the table is in it

    def _check(self, problems: _Problems) -> None:
        problems.add("table_id", limits.new_table_id_problem(self.table_id))
        if self.profile not in PROFILE_NAMES:
            problems.add("profile", f"choose a profile: {', '.join(PROFILE_NAMES)}")
        options = self.options or {}
        if not isinstance(options, dict) or any(type(v) is not bool for v in options.values()):
            problems.add("options", "options are named true/false switches")
        elif options.get("ace_low") and not options.get("straights"):
            problems.add("options.ace_low", "ace_low needs straights")
        elif self.profile != "classic" and any(options.values()):
            problems.add("options", "only classic tables take options")
        problems.add("min_stake", limits.amount_problem(self.min_stake, "min_stake"))
        problems.add("max_stake", limits.amount_problem(self.max_stake, "max_stake"))
        if type(self.min_stake) is int and type(self.max_stake) is int and 0 < self.max_stake < self.min_stake:
            problems.add("max_stake", "max_stake must be at least min_stake")
        problems.add("seats", limits.seat_count_problem(self.seats))
        problems.add("currency_code", currencies.currency_problem(self.currency))
        problems.add("turn_timeout", limits.int_problem(self.turn_timeout, "turn_timeout", 1, limits.MAX_TURN_TIMEOUT))
        if self.dealer is not None:
            problems.add("dealer", limits.id_problem(self.dealer, "dealer"))
        if self.profile_version is not None:
            problems.add("profile_version", limits.int_problem(self.profile_version, "profile_version", 1, 1000))

    def fields(self) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in field_names(type(self)) if name != "_"}
        values["options"] = dict(sorted((self.options or {}).items()))
        return values


@dataclass(frozen=True, slots=True)
class TakeSeat(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    player: str
    seat: int

    @property
    def actor(self) -> str | None:
        return self.player

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.player)
        problems.add("seat", limits.seat_problem(self.seat, "seat"))


@dataclass(frozen=True, slots=True)
class LeaveSeat(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    player: str
    seat: int | None = None

    @property
    def actor(self) -> str | None:
        return self.player

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.player)
        if self.seat is not None:
            problems.add("seat", limits.seat_problem(self.seat, "seat"))


@dataclass(frozen=True, slots=True)
class BidForBanker(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    player: str
    rounds: int

    @property
    def actor(self) -> str | None:
        return self.player

    @property
    def wallets(self) -> tuple[str, ...]:
        return (self.player,)

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.player)
        problems.add("rounds", limits.int_problem(self.rounds, "rounds", 0, limits.MAX_BID_ROUNDS))


@dataclass(frozen=True, slots=True)
class CloseBankerBid(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str


@dataclass(frozen=True, slots=True)
class DisconnectBanker(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    player: str

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.player)


@dataclass(frozen=True, slots=True)
class ReconnectBanker(Command):
    """A disconnected player-banker is back (its own call, or the platform reporting it)."""

    stream: ClassVar[Stream] = "table"
    table_id: str
    player: str

    @property
    def actor(self) -> str | None:
        return self.player

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.player)


@dataclass(frozen=True, slots=True)
class CheckpointTable(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    period: str = ""

    def _check(self, problems: _Problems) -> None:
        problems.add(
            "period", limits.text_problem(self.period, "period", most=limits.MAX_ID, required=False, shown=True)
        )


@dataclass(frozen=True, slots=True)
class StartRound(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    client_seed: str = ""

    def _check(self, problems: _Problems) -> None:
        problems.add(
            "client_seed",
            limits.text_problem(self.client_seed, "client_seed", most=limits.MAX_CLIENT_SEED, required=False),
        )


# --- the store's log of closed rounds ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignTreeHead(Command):
    """Sign a tree head over the store's log of closed rounds (docs/checkpoints.md); operator only.

    ``shard`` names the store: the shard of its tables' and wallets' ids (the text before the
    ``/``); empty, the store of the ids without a shard (the one store when unpartitioned).
    """

    stream: ClassVar[Stream] = "log"
    shard: str = ""

    @property
    def key(self) -> str:
        return f"{self.shard}/" if self.shard else ""

    def violations(self) -> tuple[FieldViolation, ...]:
        problems = _Problems()
        problems.add("shard", limits.id_problem(self.shard, "shard", required=False))
        if isinstance(self.shard, str) and "/" in self.shard:
            problems.add("shard", "a shard is the text before the first '/' of an id")
        return tuple(problems.found)


# --- rounds -------------------------------------------------------------------------------------


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

    def _check(self, problems: _Problems) -> None:
        problems.add("seat", limits.seat_problem(self.seat, "seat"))
        _player(problems, self.player)


@dataclass(frozen=True, slots=True)
class PlaceBet(_SeatCommand):
    """A stake on a seat; with ``client_seed``, the bettor's contribution to the round's client seed too."""

    stake: int
    client_seed: str | None = None

    @property
    def wallets(self) -> tuple[str, ...]:
        return (self.player,)

    def _check(self, problems: _Problems) -> None:
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

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.player, required=False)
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

    def _check(self, problems: _Problems) -> None:
        _player(problems, self.banker or None, required=False)


@dataclass(frozen=True, slots=True)
class BankerReveal(BankerCommand):
    seats: tuple[int, ...] = ()
    player: str | None = None

    def _check(self, problems: _Problems) -> None:
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

    def _check(self, problems: _Problems) -> None:
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

    def _check(self, problems: _Problems) -> None:
        problems.add(
            "reason", limits.text_problem(self.reason, "reason", most=limits.MAX_REASON, required=True, shown=True)
        )


COMMANDS: tuple[type[Command], ...] = (
    OpenWallet,
    Deposit,
    Withdraw,
    OpenWalletSession,
    OpenTable,
    TakeSeat,
    LeaveSeat,
    BidForBanker,
    CloseBankerBid,
    DisconnectBanker,
    ReconnectBanker,
    CheckpointTable,
    SignTreeHead,
    StartRound,
    PlaceBet,
    ContributeSeed,
    Deal,
    PlaceSideBet,
    CloseSideBets,
    Draw,
    Stay,
    BankerReveal,
    BankerDraw,
    BankerStay,
    TimeOutTurn,
    VoidRound,
)
"""Every command type; ``PokdengApp`` runs each through its handler."""
