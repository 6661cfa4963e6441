"""Game math's strategies: what the player and the banker do where the profile lets them choose.

``Strategy`` names the two-card totals a hand draws on; ``reference_strategy`` is the documented one of
each profile (``REFERENCE_DRAW_MAX``). The player's best strategy is computed from the exact figures
(``draw_game_math.best_strategy``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from .profiles import DrawRule, Profile

Action = Literal["draw", "stand"]


@dataclass(frozen=True, slots=True)
class Strategy:
    """What the player and the banker do where the profile lets them choose.

    ``player_draws`` / ``banker_draws``: the two-card totals, within the profile's choice
    range, on which the hand draws; on the other choice totals it stands. Outside the
    choice range the profile's automatic action applies (RULES.md section 3) and a pok
    never draws. The banker never uses the selective reveal.
    """

    name: str
    player_draws: frozenset[int] = frozenset()
    banker_draws: frozenset[int] = frozenset()

    def player_action(self, profile: Profile, points: int) -> Action:
        return _action(profile.player_draw, self.player_draws, points)

    def banker_action(self, profile: Profile, points: int) -> Action:
        return _action(profile.banker_draw, self.banker_draws, points)

    def describe(self, profile: Profile) -> str:
        parts = []
        for who, rule in (("player", profile.player_draw), ("banker", profile.banker_draw)):
            if rule is None:
                continue
            draws = [t for t in range(8) if _action(rule, self._draws(who), t) == "draw"]
            parts.append(f"{who} draws on {_ranges(draws)}, stands on {_ranges(sorted(set(range(8)) - set(draws)))}")
        return "; ".join(parts) if parts else "no decisions (two cards each)"

    def _draws(self, who: str) -> frozenset[int]:
        return self.player_draws if who == "player" else self.banker_draws


def _action(rule: DrawRule | None, chosen: frozenset[int], points: int) -> Action:
    if rule is None or points >= 8:  # no draws in the profile, or a pok (two cards, 8 or 9)
        return "stand"
    action = rule.action(points)
    if action == "choose":
        return "draw" if points in chosen else "stand"
    return action


def _ranges(values: Sequence[int]) -> str:
    if not values:
        return "none"
    out: list[str] = []
    start = prev = values[0]
    for v in [*values[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def choice_totals(rule: DrawRule | None) -> tuple[int, ...]:
    if rule is None:
        return ()
    return tuple(t for t in range(8) if rule.action(t) == "choose")


REFERENCE_DRAW_MAX: Mapping[str, int] = MappingProxyType({"classic": 4})
"""Reference strategy: on a choice total the hand draws on totals up to this (classic: 0-4, both sides).
Other profiles: the automatic action the profile gives on timeout (room and kingmaker players
draw on 0-3 anyway and stand on 4-7; the room banker stands on 4-7)."""


def reference_strategy(profile: Profile) -> Strategy:
    """The documented reference strategy of ``profile`` (see ``REFERENCE_DRAW_MAX``)."""

    def draws(rule: DrawRule | None) -> frozenset[int]:
        if rule is None:
            return frozenset()
        limit = REFERENCE_DRAW_MAX.get(profile.name, rule.timeout_draw_max)
        return frozenset(t for t in choice_totals(rule) if t <= limit)

    return Strategy("reference", draws(profile.player_draw), draws(profile.banker_draw))


StrategyLike = Strategy | Literal["reference", "best"] | str
