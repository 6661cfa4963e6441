"""Game math's results: the exact figures of a profile (``RtpResult`` and its parts: decisions, side bet,
commission, ante) and the simulated ones (``SimulationResult``, each figure an ``Estimate`` with its 95%
confidence interval), each with its JSON-ready view (``to_dict``: exact values as ``"p/q"`` strings
next to decimals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .strategies import Action, Strategy

Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass(frozen=True, slots=True)
class Decision:
    """One two-card total of the player, not a pok, when the banker has no pok.

    ``probability`` of that situation; ``ev_stand`` and ``ev_draw`` are E[net per unit | situation,
    action]; ``rule`` is what the profile allows (draw, stand or choose); ``chosen`` what the
    strategy does. An action the profile does not allow is still valued, for comparison.
    """

    total: int
    probability: Fraction
    ev_stand: Fraction
    ev_draw: Fraction
    rule: str
    chosen: Action

    @property
    def best(self) -> Action:
        return "draw" if self.ev_draw > self.ev_stand else "stand"

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "probability": _fx(self.probability),
            "ev_stand": _fx(self.ev_stand),
            "ev_draw": _fx(self.ev_draw),
            "rule": self.rule,
            "chosen": self.chosen,
            "best": self.best,
        }


@dataclass(frozen=True, slots=True)
class SideBetMath:
    """Kingmaker's side bet, on its own: offered when the banker's up card is an 8 or a 9."""

    offer_probability: Fraction  # P(up card is 8 or 9)
    natural_probability: Fraction  # P(banker natural | offered): the side bet wins
    payout: Fraction  # net per unit on a win (1.2)
    rtp: Fraction  # P(natural | offered) x (1 + payout)
    best_conditional_rtp: Fraction  # the best a player can do knowing its own two cards too

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp

    def to_dict(self) -> dict[str, Any]:
        return {
            "offer_probability": _fx(self.offer_probability),
            "natural_probability": _fx(self.natural_probability),
            "payout": _fx(self.payout),
            "rtp": _fx(self.rtp),
            "house_edge": _fx(self.house_edge),
            "best_conditional_rtp": _fx(self.best_conditional_rtp),
        }


@dataclass(frozen=True, slots=True)
class CommissionMath:
    """The room's commissions, per unit of the player's stake (one player against the banker)."""

    player_rate: Fraction
    banker_rate: Fraction
    player_commission: Fraction  # E[commission the player pays]
    banker_commission: Fraction  # E[commission the banker pays on this stake] (not part of the player's RTP)
    rtp_before_commission: Fraction

    def to_dict(self) -> dict[str, Any]:
        return {
            "player_rate": _fx(self.player_rate),
            "banker_rate": _fx(self.banker_rate),
            "player_commission": _fx(self.player_commission),
            "banker_commission": _fx(self.banker_commission),
            "rtp_before_commission": _fx(self.rtp_before_commission),
        }


@dataclass(frozen=True, slots=True)
class AnteMath:
    """The ante profile's wager split: figures per unit of ante and per unit of bet."""

    ante_ev: Fraction  # E[ante net] / ante
    bet_ev: Fraction  # E[bet net] / bet
    edge_per_ante: Fraction  # -E[net of ante + bet] / ante (the wager is 2 antes)
    bet_won: Fraction
    bet_push: Fraction
    bet_lost: Fraction

    def to_dict(self) -> dict[str, Any]:
        return {
            "ante_ev": _fx(self.ante_ev),
            "bet_ev": _fx(self.bet_ev),
            "edge_per_ante": _fx(self.edge_per_ante),
            "bet_won": _fx(self.bet_won),
            "bet_push": _fx(self.bet_push),
            "bet_lost": _fx(self.bet_lost),
        }


@dataclass(frozen=True, slots=True)
class RtpResult:
    """Exact figures for one profile and strategy, per unit staked."""

    profile: str
    strategy: Strategy
    strategy_text: str
    method: str
    stake: int | None  # None: exact multipliers (large stakes)
    deals: int  # the number of equally likely deals enumerated (probabilities are counts / deals)
    rtp: Fraction
    win: Fraction
    tie: Fraction
    loss: Fraction
    variance: Fraction  # of a unit bet's net
    hand_types: tuple[tuple[str, Fraction], ...]  # the player's final hand, best first
    nets: tuple[tuple[Fraction, Fraction], ...]  # (net per unit, probability)
    decisions: tuple[Decision, ...] = ()
    side_bet: SideBetMath | None = None
    commission: CommissionMath | None = None
    ante: AnteMath | None = None

    @property
    def house_edge(self) -> Fraction:
        return 1 - self.rtp

    @property
    def sd(self) -> float:
        return math.sqrt(self.variance)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: exact values as ``"p/q"`` strings next to decimals."""
        out: dict[str, Any] = {
            "profile": self.profile,
            "strategy": self.strategy.name,
            "strategy_text": self.strategy_text,
            "method": self.method,
            "stake": self.stake,
            "deals": self.deals,
            "rtp": _fx(self.rtp),
            "house_edge": _fx(self.house_edge),
            "win": _fx(self.win),
            "tie": _fx(self.tie),
            "loss": _fx(self.loss),
            "variance": _fx(self.variance),
            "sd": self.sd,
            "hand_types": {name: _fx(p) for name, p in self.hand_types},
            "nets": [{"net": _fx(net), "probability": _fx(p)} for net, p in self.nets],
        }
        if self.decisions:
            out["decisions"] = [d.to_dict() for d in self.decisions]
        if self.side_bet is not None:
            out["side_bet"] = self.side_bet.to_dict()
        if self.commission is not None:
            out["commission"] = self.commission.to_dict()
        if self.ante is not None:
            out["ante"] = self.ante.to_dict()
        return out


def _fx(value: Fraction) -> dict[str, Any]:
    return {"exact": str(value), "decimal": float(value)}


@dataclass(frozen=True, slots=True)
class Estimate:
    """A simulated figure with its 95% confidence interval and standard error."""

    value: float
    low: float
    high: float
    se: float

    def contains(self, x: float, sigmas: float = Z95) -> bool:
        return abs(x - self.value) <= sigmas * self.se

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high, "se": self.se}


@dataclass(frozen=True, slots=True)
class SimulationResult:
    profile: str
    strategy: Strategy
    strategy_text: str
    rounds: int
    seed: str
    stake: int
    rtp: Estimate
    win: Estimate
    tie: Estimate
    loss: Estimate
    sd: float
    hand_types: tuple[tuple[str, Estimate], ...]
    side_bets: int = 0
    side_bet_rtp: Estimate | None = None

    @property
    def house_edge(self) -> Estimate:
        r = self.rtp
        return Estimate(1 - r.value, 1 - r.high, 1 - r.low, r.se)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "profile": self.profile,
            "strategy": self.strategy.name,
            "strategy_text": self.strategy_text,
            "rounds": self.rounds,
            "seed": self.seed,
            "stake": self.stake,
            "rtp": self.rtp.to_dict(),
            "house_edge": self.house_edge.to_dict(),
            "win": self.win.to_dict(),
            "tie": self.tie.to_dict(),
            "loss": self.loss.to_dict(),
            "sd": self.sd,
            "hand_types": {name: est.to_dict() for name, est in self.hand_types},
        }
        if self.side_bet_rtp is not None:
            out["side_bets"] = self.side_bets
            out["side_bet_rtp"] = self.side_bet_rtp.to_dict()
        return out
