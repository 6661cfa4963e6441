"""The report of ``pokdeng wallet reconcile`` (``wallet.reconcile``): each transaction listed apart (a difference,
pending, held, resolved, not ours) and each side's money moved per player and currency.

Its text (``render``) says money as a person reads it (``pokdeng_service.money.format_money``: the ISO 4217
exponent, the locale's grouping); its JSON (``as_dict``) keeps integer minor units, with their currency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pokdeng_service.money import format_money


@dataclass(frozen=True)
class Difference:
    tx_id: str
    player: str
    round_id: str
    pokdeng: str  # what pokdeng's record says
    platform: str  # what the platform's says
    amount: int = 0  # the transaction's amount, in minor units of ``currency``
    currency: str = ""

    def render(self) -> str:
        return f"{self.tx_id} ({self.player}, round {self.round_id}): pokdeng {self.pokdeng}; platform {self.platform}"


@dataclass
class Reconciliation:
    since: str
    until: str
    compared: int = 0
    differences: list[Difference] = field(default_factory=list)
    pending: list[Difference] = field(default_factory=list)
    held: list[Difference] = field(default_factory=list)  # accepted debits of open rounds (their stakes in play)
    resolved: list[Difference] = field(default_factory=list)  # finished by an operator (``pokdeng wallet resolve``)
    not_ours: list[Difference] = field(default_factory=list)  # the platform's transactions of no table of pokdeng's
    # (player, currency) -> money moved, in minor units (credits - debits): pokdeng's record, the platform's (its
    # transactions of pokdeng's tables), and the platform's transactions not ours
    pokdeng_moved: dict[tuple[str, str], int] = field(default_factory=dict)
    platform_moved: dict[tuple[str, str], int] = field(default_factory=dict)
    not_ours_moved: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.differences

    @property
    def players(self) -> list[str]:
        """Every player of either side (its transactions of pokdeng's tables)."""
        return sorted({*self.pokdeng_totals, *self.platform_totals})

    @property
    def pokdeng_totals(self) -> dict[str, int]:
        """Player -> minor units moved per pokdeng (summed over its currencies: ``totals`` splits them)."""
        return per_player(self.pokdeng_moved)

    @property
    def platform_totals(self) -> dict[str, int]:
        return per_player(self.platform_moved)

    @property
    def not_ours_totals(self) -> dict[str, int]:
        return per_player(self.not_ours_moved)

    def totals(self) -> list[dict[str, Any]]:
        """Each player's money moved in each currency, per pokdeng and per the platform (minor units)."""
        keys = sorted({*self.pokdeng_moved, *self.platform_moved})
        return [
            {"player": p, "currency": c, "pokdeng": self.pokdeng_moved.get((p, c), 0),
             "platform": self.platform_moved.get((p, c), 0)}
            for p, c in keys
        ]  # fmt: skip

    def render(self) -> str:
        lines = [f"reconciliation {self.since} .. {self.until}: {self.compared} transactions compared"]
        lines += [f"  DIFF {d.render()}" for d in self.differences]
        lines += [f"  pending {d.render()}" for d in self.pending]
        lines += [f"  held {d.render()}" for d in self.held]
        lines += [f"  resolved {d.render()}" for d in self.resolved]
        lines += [f"  not ours {d.render()}" for d in self.not_ours]
        for row in self.totals():
            ours, theirs, currency = row["pokdeng"], row["platform"], row["currency"]
            differs = f" (differs by {format_money(theirs - ours, currency)})" if ours != theirs else ""
            lines.append(
                f"  player {row['player']}: moved per pokdeng {format_money(ours, currency)}, "
                f"per the platform {format_money(theirs, currency)}{differs}"
            )
        lines.append(
            f"{len(self.differences)} differences, {len(self.pending)} pending, {len(self.held)} held by open rounds, "
            f"{len(self.resolved)} resolved by an operator, {len(self.not_ours)} of the platform not ours; money "
            f"moved for {len(self.players)} players: pokdeng {sums(self.pokdeng_moved)}, platform "
            f"{sums(self.platform_moved)} (not ours: {sums(self.not_ours_moved)})"
        )
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "compared": self.compared,
            "differences": [d.__dict__ for d in self.differences],
            "pending": [d.__dict__ for d in self.pending],
            "held": [d.__dict__ for d in self.held],
            "resolved": [d.__dict__ for d in self.resolved],
            "not_ours": [d.__dict__ for d in self.not_ours],
            "players": self.players,
            "totals": self.totals(),
            "pokdeng_totals": self.pokdeng_totals,
            "platform_totals": self.platform_totals,
            "not_ours_totals": self.not_ours_totals,
        }


def per_player(moved: dict[tuple[str, str], int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (player, _currency), amount in moved.items():
        out[player] = out.get(player, 0) + amount
    return out


def sums(moved: dict[tuple[str, str], int]) -> str:
    """The money moved in each currency, as a person reads it (``THB 1,200.00``; ``0``: none)."""
    per: dict[str, int] = {}
    for (_player, currency), amount in moved.items():
        per[currency] = per.get(currency, 0) + amount
    return " + ".join(format_money(amount, currency) for currency, amount in sorted(per.items())) or "0"


def add_moved(moved: dict[tuple[str, str], int], player: str, currency: str, amount: int) -> None:
    moved[(player, currency)] = moved.get((player, currency), 0) + amount


__all__ = ["Difference", "Reconciliation", "add_moved", "per_player", "sums"]
