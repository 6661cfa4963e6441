"""The application's commands, as data: one frozen type per operation.

A command names the stream it addresses (``stream`` and ``key``: a wallet, a table or a
round), lists every bad field at once (``violations``), names the player it acts for
(``actor``: a player token may send it only for itself) and the wallets it touches
(``wallets``: they must live in the command's partition), and gives the idempotency
fingerprint of a request (``fingerprint``: its name and fields). ``PokdengApp.handle``
runs any of them; the handler of each type is in ``wallets``, ``tables`` or ``rounds``. What every command
shares is ``commanding`` (``Command``); the round's commands are ``round_commands`` (``COMMANDS`` here lists them too).

Adding a command: its type here, its handler, its RPC and its tests (docs/architecture.md, "Adding a command").
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar

from pokdeng_core import currencies, limits
from pokdeng_core.profiles import PROFILE_NAMES
from pokdeng_service.application.commanding import Command, Problems, Stream, check_player
from pokdeng_service.application.errors import FieldViolation
from pokdeng_service.application.round_commands import (
    BankerDraw,
    BankerReveal,
    BankerStay,
    CloseSideBets,
    ContributeSeed,
    Deal,
    Draw,
    PlaceBet,
    PlaceSideBet,
    Stay,
    TimeOutTurn,
    VoidRound,
)
from pokdeng_service.store.codec import field_names

# --- wallets ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenWallet(Command):
    stream: ClassVar[Stream] = "wallet"
    wallet_id: str
    currency: str = currencies.DEFAULT  # ISO 4217, with minor units

    def _check(self, problems: Problems) -> None:
        problems.add("wallet_id", limits.new_id_problem(self.wallet_id, "wallet_id"))
        problems.add("currency_code", currencies.currency_problem(self.currency))


@dataclass(frozen=True, slots=True)
class _MoneyMovement(Command):
    stream: ClassVar[Stream] = "wallet"
    wallet_id: str
    amount: int

    def _check(self, problems: Problems) -> None:
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
        problems = Problems()
        check_player(problems, self.player)
        self._check(problems)
        return tuple(problems.found)

    def _check(self, problems: Problems) -> None:
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

    def _check(self, problems: Problems) -> None:
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

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.player)
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

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.player)
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

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.player)
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

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.player)


@dataclass(frozen=True, slots=True)
class ReconnectBanker(Command):
    """A disconnected player-banker is back (its own call, or the platform reporting it)."""

    stream: ClassVar[Stream] = "table"
    table_id: str
    player: str

    @property
    def actor(self) -> str | None:
        return self.player

    def _check(self, problems: Problems) -> None:
        check_player(problems, self.player)


@dataclass(frozen=True, slots=True)
class CheckpointTable(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    period: str = ""

    def _check(self, problems: Problems) -> None:
        problems.add(
            "period", limits.text_problem(self.period, "period", most=limits.MAX_ID, required=False, shown=True)
        )


@dataclass(frozen=True, slots=True)
class StartRound(Command):
    stream: ClassVar[Stream] = "table"
    table_id: str
    client_seed: str = ""

    def _check(self, problems: Problems) -> None:
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
        problems = Problems()
        problems.add("shard", limits.id_problem(self.shard, "shard", required=False))
        if isinstance(self.shard, str) and "/" in self.shard:
            problems.add("shard", "a shard is the text before the first '/' of an id")
        return tuple(problems.found)


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
