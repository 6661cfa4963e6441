"""Rule profiles: named, versioned, immutable configuration (RULES.md section 3).

A profile carries everything that differs between the four games: the shoe,
seat limits, who may draw and when, how hands are compared and paid, the
commission, the reservation multiple and the side bet. Rounds record the
profile's name, version and options, so that an old round replays under its
own rules: ``get_profile(name, version=..., **options)`` rebuilds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from fractions import Fraction
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .catalog import ENGINE_VERSION as ENGINE_VERSION  # (re-exported: its old home)
from .catalog import PROFILE_NAMES as PROFILE_NAMES


class ProfileError(ValueError):
    """An unknown profile, version or option."""


class Comparison(StrEnum):
    """How a player's hand is compared with the banker's and paid."""

    CLASSIC = "classic"  # type, then taem, then deng; paid by deng (seed 000)
    RANKED = "ranked"  # six ranks with fixed multipliers (seeds 002, 003)
    ANTE = "ante"  # two-card values 9 > 8 > specials > 7..0, ante and bet (seed 001)


class BankerKind(StrEnum):
    HOUSE = "house"
    PLAYER = "player"


class DrawRule(BaseModel):
    """When a hand that is not a pok draws its third card.

    taem <= ``auto_max``: draws at once, no choice. taem <= ``choice_max``: the holder
    chooses. Higher: stands. ``timeout_draw_max``: the automatic action when the holder
    does not act in time (draw on taem <= this, otherwise stay).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    auto_max: int = Field(default=-1, ge=-1, le=9)
    choice_max: int = Field(default=9, ge=-1, le=9)
    timeout_draw_max: int = Field(default=3, ge=-1, le=9)

    def action(self, points: int) -> Literal["draw", "choose", "stand"]:
        if points <= self.auto_max:
            return "draw"
        if points <= self.choice_max:
            return "choose"
        return "stand"

    def timeout_draws(self, points: int) -> bool:
        return points <= self.timeout_draw_max


class SideBetRule(BaseModel):
    """Kingmaker's side bet on the banker holding a natural (pok or pok deng)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    up_card_points: tuple[int, ...] = (8, 9)
    payout: str = "1.2"  # the side stake times this, floored, is the winning side bet's gross
    stake_equals_main: bool = True

    @property
    def payout_fraction(self) -> Fraction:
        return Fraction(self.payout)


class RankedMultipliers(BaseModel):
    """Multipliers of the ranked comparison (room and kingmaker), as exact decimal strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pok_deng: str = "2"
    pok: str = "1"
    tong: str = "5"
    straight_flush: str = "5"
    straight: str = "3"
    sam_lueang: str = "3"
    sam_deng: str = "3"
    song_deng: str = "2"
    taem: str = "1"

    @field_validator("*")
    @classmethod
    def _positive(cls, value: str) -> str:
        if Fraction(value) <= 0:
            raise ValueError("a multiplier must be positive")
        return value

    def fraction(self, label: str) -> Fraction:
        return _fraction(getattr(self, label))


@lru_cache(maxsize=1024)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


class BankerBidRule(BaseModel):
    """The room's banker bid: players bid a tenure in rounds, or skip."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenures: tuple[int, ...] = (10, 5)
    reconnect_seconds: int = 5


class Profile(BaseModel):
    """One game's rules. Immutable; compare and hash by value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Literal["classic", "ante", "room", "kingmaker"]
    version: int = Field(ge=1)
    title: str
    decks: int = Field(ge=1, le=8)
    min_hands: int = Field(ge=1)
    max_hands: int = Field(ge=1)
    fixed_positions: int | None = None  # ante: hands are betting positions dealt every round
    seats_per_player: int = Field(ge=1)
    banker: tuple[BankerKind, ...]
    comparison: Comparison
    straights: bool = False
    ace_low: bool = False
    player_draw: DrawRule | None  # None: no draws (ante)
    banker_draw: DrawRule | None
    banker_selective_reveal: bool = False
    multipliers: RankedMultipliers | None = None
    sam_lueang_by_ranks: bool = False  # kingmaker: K K Q > K K J > ... > Q J J
    loss_multiplier_floor: str = "0"  # kingmaker: a loser pays stake * max(1, banker's multiplier)
    player_commission: str = "0"  # rate on a winning player's gross
    banker_commission: str = "0"  # rate on a player-banker's positive net for the round
    reserve_multiple: int = Field(ge=1)  # the most a stake can lose, in stakes
    wager_split: bool = False  # ante: each wager is half ante, half bet
    side_bet: SideBetRule | None = None
    banker_bid: BankerBidRule | None = None
    engine_rules: str = "RULES.md"

    def __hash__(self) -> int:
        """By the profile's identity fields only: equal profiles agree on them, so this is a valid hash,
        and it costs a fraction of hashing every field (the core's caches key on profiles)."""
        return hash((self.name, self.version, self.straights, self.ace_low))

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        if self.min_hands > self.max_hands:
            raise ValueError("min_hands exceeds max_hands")
        if self.comparison is Comparison.RANKED and self.multipliers is None:
            raise ValueError("a ranked profile needs multipliers")
        if self.ace_low and not self.straights:
            raise ValueError("ace_low only applies when straights are on")
        if self.banker_bid is not None and BankerKind.PLAYER not in self.banker:
            raise ValueError("a banker bid needs a player banker")
        cards_needed = (self.max_hands + 1) * (3 if self.player_draw else 2)
        if cards_needed > 52 * self.decks:
            raise ValueError(f"{self.max_hands} hands need {cards_needed} cards, more than the shoe holds")
        return self

    @property
    def player_commission_rate(self) -> Fraction:
        return _fraction(self.player_commission)

    @property
    def banker_commission_rate(self) -> Fraction:
        return _fraction(self.banker_commission)

    @property
    def loss_floor(self) -> Fraction:
        return _fraction(self.loss_multiplier_floor)

    @property
    def shoe_size(self) -> int:
        return 52 * self.decks

    @property
    def options(self) -> dict[str, Any]:
        """The table options that differ from the preset (what ``get_profile`` needs besides name and version)."""
        if self.name != "classic":
            return {}
        return {"straights": self.straights, "ace_low": self.ace_low}

    @property
    def key(self) -> str:
        """A short stable identity: ``classic@1``, ``classic@1+straights``."""
        extra = "".join(f"+{k}" for k, v in sorted(self.options.items()) if v)
        return f"{self.name}@{self.version}{extra}"


_CHOICE_ALWAYS = DrawRule(auto_max=-1, choice_max=9, timeout_draw_max=3)
_AUTO_LOW_CHOICE_MID = DrawRule(auto_max=3, choice_max=7, timeout_draw_max=3)

CLASSIC_V1 = Profile(
    name="classic",
    version=1,
    title="Classic Pok Deng (seed 000)",
    decks=1,
    min_hands=1,
    max_hands=16,
    seats_per_player=16,
    banker=(BankerKind.HOUSE, BankerKind.PLAYER),
    comparison=Comparison.CLASSIC,
    straights=False,
    ace_low=False,
    player_draw=_CHOICE_ALWAYS,
    banker_draw=_CHOICE_ALWAYS,
    banker_selective_reveal=True,
    reserve_multiple=5,
)

ANTE_V1 = Profile(
    name="ante",
    version=1,
    title="Ante and bet, eight decks (seed 001)",
    decks=8,
    min_hands=5,
    max_hands=5,
    fixed_positions=5,
    seats_per_player=5,
    banker=(BankerKind.HOUSE,),
    comparison=Comparison.ANTE,
    player_draw=None,
    banker_draw=None,
    reserve_multiple=1,
    wager_split=True,
)

ROOM_V1 = Profile(
    name="room",
    version=1,
    title="Online room with a player banker (seed 002)",
    decks=1,
    min_hands=1,
    max_hands=5,
    seats_per_player=1,
    banker=(BankerKind.PLAYER,),
    comparison=Comparison.RANKED,
    straights=True,
    player_draw=_AUTO_LOW_CHOICE_MID,
    banker_draw=DrawRule(auto_max=3, choice_max=7, timeout_draw_max=3),
    banker_selective_reveal=True,
    multipliers=RankedMultipliers(),
    player_commission="0.03",
    banker_commission="0.03",
    reserve_multiple=5,
    banker_bid=BankerBidRule(),
)

KINGMAKER_V1 = Profile(
    name="kingmaker",
    version=1,
    title="Kingmaker Pok Deng (seed 003)",
    decks=1,
    min_hands=1,
    max_hands=5,
    seats_per_player=1,
    banker=(BankerKind.HOUSE,),
    comparison=Comparison.RANKED,
    straights=True,
    player_draw=_AUTO_LOW_CHOICE_MID,
    banker_draw=DrawRule(auto_max=5, choice_max=5, timeout_draw_max=5),
    banker_selective_reveal=False,
    multipliers=RankedMultipliers(pok="0.95", taem="0.95"),
    sam_lueang_by_ranks=True,
    loss_multiplier_floor="1",
    reserve_multiple=5,
    side_bet=SideBetRule(),
)

PRESETS: dict[str, Mapping[int, Profile]] = {
    "classic": MappingProxyType({1: CLASSIC_V1}),
    "ante": MappingProxyType({1: ANTE_V1}),
    "room": MappingProxyType({1: ROOM_V1}),
    "kingmaker": MappingProxyType({1: KINGMAKER_V1}),
}
"""The registry of profile versions. Never changed by the engine; a plain dict only because a
service test (tests/service/test_audit.py) swaps in a newer version with ``monkeypatch.setitem``."""
if tuple(PRESETS) != PROFILE_NAMES:  # pragma: no cover - (catalog.py names them for light importers)
    raise ImportError(f"catalog.PROFILE_NAMES {PROFILE_NAMES} are not the presets {tuple(PRESETS)}")

_CLASSIC_OPTIONS = frozenset({"straights", "ace_low"})


def get_profile(name: str | Profile, version: int | None = None, **options: Any) -> Profile:
    """A profile by name (latest version unless ``version``), with table options.

    Only classic takes options: ``straights`` (default False) and ``ace_low`` (default False;
    needs ``straights``). Anything else, an unknown name or an unknown version raises
    ``ProfileError``. The same arguments always give the same (cached) instance.
    """
    if isinstance(name, Profile):
        if version is None and not options:
            return name
        return get_profile(name.name, version or name.version, **{**name.options, **options})
    if not isinstance(name, str):
        raise ProfileError(f"a profile name must be text, not {name!r}: choose one of {', '.join(PROFILE_NAMES)}")
    for option, value in options.items():
        if not isinstance(value, bool):
            raise ProfileError(f"option {option!r} must be true or false, not {value!r}")
    versions = PRESETS.get(name)
    if versions is None:
        raise ProfileError(f"unknown profile {name!r}: choose one of {', '.join(PROFILE_NAMES)}")
    chosen = max(versions) if version is None else version
    base = versions.get(chosen)
    if base is None or isinstance(version, bool):
        raise ProfileError(f"profile {name!r} has no version {version!r}: known versions {sorted(versions)}")
    unknown = set(options) - (_CLASSIC_OPTIONS if name == "classic" else set())
    if unknown:
        raise ProfileError(f"profile {name!r} takes no option {', '.join(sorted(unknown))}")
    if not options:
        return base
    return _with_options(base, tuple(sorted(options.items())))


@cache  # (lru_cache without a bound) keys are checked first: a registered profile and known true/false options
def _with_options(base: Profile, options: tuple[tuple[str, bool], ...]) -> Profile:
    """``base`` with table options; one instance per (preset, options), keyed by the preset itself so
    that a newly registered version never meets an instance built from the one it replaced."""
    try:
        return Profile.model_validate({**base.model_dump(), **dict(options)})
    except ValidationError as error:
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in error.errors())
        raise ProfileError(f"profile {base.name!r} cannot take options {dict(options)}: {reasons}") from None


_CACHE = _with_options
"""The old name of the options cache (tests/service/test_audit.py resets it with ``monkeypatch``;
nothing reads it: the cache is keyed by the preset, so a new version needs no reset)."""
