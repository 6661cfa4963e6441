"""Game math: the exact return to player of every profile, and a Monte Carlo check through the machine.

Everything here is pure (no I/O, no clock); ``docs/game-math.md`` explains the method and
shows the figures. Two entry points:

* ``exact(profile, strategy)`` enumerates every deal completely (no sampling) and returns
  exact ``Fraction`` figures: RTP, house edge, win/tie/loss, the variance of a unit bet's
  net, the probability of each final player hand type, and per profile the side bet, the
  commission or the ante/bet split.
* ``simulate(profile, rounds, seed, strategy)`` plays whole rounds through the round state
  machine (``machine.decide``/``evolve``) on seeded shuffles and returns the same figures
  with 95% confidence intervals.

Its parts, each a module of one job: ``strategies`` (reference and chosen play), ``deal_counts``
(the exact deal counts of the single-deck draw games), ``draw_game_math`` (their figures and the
best strategy), ``ante_math`` (the ante profile's), ``rtp_simulation`` (rounds through the machine)
and ``rtp_results`` (the figures and their JSON). Every public name is importable from here.

Definitions (per unit staked, one player's hand against the banker):

* net = what the player's wallet gains on the stake (negative: loses), after commission;
* RTP = E[amount returned] / stake = 1 + E[net] / stake; house edge = 1 - RTP = -E[net] / stake;
* win / tie / loss = probabilities of the stake's outcome.

One hand against the banker is enough: the other seats do not change the joint law of this
hand's cards and the banker's. The shoe is a uniformly random permutation and, in the
strategies below, every decision depends only on the decider's own cards, so every card
this hand or the banker receives - dealt or drawn, whatever other seats did before - is
uniform over the cards not yet seen by it (the unseen cards are exchangeable).

Money is computed at a stake where the profile's multipliers are exact (0.95, the 3%
commission): at small stakes ``floor``/``ceil`` rounding (RULES.md section 2) lowers the
player's return further; ``exact(..., stake=s)`` gives the exact figures at stake ``s``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .ante_math import exact_ante
from .cards import Card, canonical_deck
from .deal_counts import EXACT_STAKE as EXACT_STAKE
from .draw_game_math import best_strategy as best_strategy
from .draw_game_math import best_strategy_over, exact_draw_game, resolve_strategy
from .profiles import Comparison, Profile, get_profile
from .rtp_results import AnteMath as AnteMath
from .rtp_results import CommissionMath as CommissionMath
from .rtp_results import Decision as Decision
from .rtp_results import Estimate as Estimate
from .rtp_results import RtpResult as RtpResult
from .rtp_results import SideBetMath as SideBetMath
from .rtp_results import SimulationResult as SimulationResult
from .rtp_simulation import Played as Played
from .rtp_simulation import play_round as play_round
from .rtp_simulation import round_server_seed as round_server_seed
from .rtp_simulation import simulate as simulate
from .strategies import REFERENCE_DRAW_MAX as REFERENCE_DRAW_MAX
from .strategies import Strategy as Strategy
from .strategies import StrategyLike as StrategyLike
from .strategies import reference_strategy as reference_strategy

__all__ = (
    "AnteMath",
    "CommissionMath",
    "Decision",
    "Estimate",
    "RtpResult",
    "SideBetMath",
    "SimulationResult",
    "Strategy",
    "best_strategy",
    "exact",
    "reference_strategy",
    "round_server_seed",
    "simulate",
)


def exact(
    profile: str | Profile,
    strategy: StrategyLike = "reference",
    *,
    stake: int | None = None,
    deck: Sequence[Card] | None = None,
) -> RtpResult:
    """The exact figures of ``profile`` under ``strategy`` (``"reference"``, ``"best"`` or a ``Strategy``).

    ``stake``: settle at this stake in minor units, with its floor/ceil rounding (default: exact
    multipliers). ``deck`` (single-deck profiles, for tests): enumerate this set of distinct
    cards instead of the full deck.
    """
    rules = get_profile(profile)
    if rules.comparison is Comparison.ANTE:
        if deck is not None:
            raise ValueError("the ante profile is enumerated over its whole shoe")
        return exact_ante(rules, stake, "best" if strategy == "best" else "reference")
    if rules.decks != 1:
        raise ValueError(f"profile {rules.name} has {rules.decks} decks: only single-deck draw games are enumerated")
    cards = tuple(deck) if deck is not None else canonical_deck(1)
    if len(set(cards)) != len(cards) or len(cards) < 6:
        raise ValueError("the deck must hold at least six distinct cards")
    chosen = _resolve_for(rules, strategy, cards)
    return exact_draw_game(rules, chosen, stake, cards)


def _resolve_for(profile: Profile, strategy: StrategyLike, cards: tuple[Card, ...]) -> Strategy:
    if strategy == "best":
        return best_strategy_over(profile, cards)
    return resolve_strategy(profile, strategy)
