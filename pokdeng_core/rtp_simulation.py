"""Monte Carlo through the round state machine: whole rounds played by ``machine.decide_and_fold`` on
seeded shuffles (``play_round``), and the figures they estimate with 95% confidence intervals
(``simulate``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from . import commands as c
from . import events as e
from .ante_math import ante_type
from .cards import Card
from .deal_counts import EXACT_STAKE
from .draw_game_math import resolve_strategy
from .evaluation import evaluate
from .machine import decide_and_fold
from .profiles import BankerKind, Comparison, Profile, get_profile
from .round_state import BANKER, Phase, RoundState, attach_shoe
from .rtp_results import Z95, Estimate, SimulationResult
from .shuffle import SHUFFLE_ALGORITHM, commitment
from .strategies import Strategy, StrategyLike


def round_server_seed(seed: str | int, index: int) -> bytes:
    """The server seed of simulated round ``index``: sha256(seed || index as 8 bytes, big-endian)."""
    return hashlib.sha256(str(seed).encode("utf-8") + index.to_bytes(8, "big")).digest()


@dataclass(frozen=True, slots=True)
class Played:
    net: int
    outcome: str
    hand: str
    side_net: int | None


_PLAYER = "player"
_PLAYER_BANKER = "banker"


def play_round(profile: Profile, strategy: Strategy, server_seed: bytes, seed: str, nonce: int, stake: int) -> Played:
    """One whole round through the state machine: one stake on seat 1, a side bet whenever offered."""
    banker = None if BankerKind.HOUSE in profile.banker else _PLAYER_BANKER
    funds = 10 * stake * profile.reserve_multiple
    game = _Game()
    game.run(_opening(profile, banker, server_seed, seed, nonce, stake))
    game.state = attach_shoe(game.state, server_seed)
    game.run(c.PlaceBet(1, _PLAYER, stake, funds, funds if banker else None))
    game.run(c.Deal())
    _play_to_the_close(game, profile, strategy, banker, funds)
    return _played(game, profile)


class _Game:
    """A simulated round: its state as each decision folded it, and every event it recorded."""

    __slots__ = ("history", "state")

    def __init__(self) -> None:
        self.state = RoundState()
        self.history: list[e.RoundEvent] = []

    def run(self, command: c.RoundCommand) -> None:
        events, self.state = decide_and_fold(self.state, command)  # the state decide folded its events into
        self.history.extend(events)


def _opening(
    profile: Profile, banker: str | None, server_seed: bytes, seed: str, nonce: int, stake: int
) -> c.OpenRound:
    """The simulated round's opening: seat 1 held by the player (ante: every position, none held)."""
    if profile.fixed_positions is not None:
        seats: tuple[tuple[int, str | None], ...] = tuple((p, None) for p in range(1, profile.fixed_positions + 1))
    else:
        seats = ((1, _PLAYER),)
    return c.OpenRound(
        f"sim-{nonce}",
        "sim",
        nonce + 1,
        profile,
        seats,
        banker,
        2 if profile.wager_split else 1,  # (ante limits are even)
        stake,
        commitment(server_seed),
        f"sim:{seed}",
        nonce,
        SHUFFLE_ALGORITHM,
    )


def _play_to_the_close(game: _Game, profile: Profile, strategy: Strategy, banker: str | None, funds: int) -> None:
    """Every choice the round asks for, by ``strategy``, until it closes: the side bet placed once offered,
    then the window closed; the player's draw or stay; the banker's."""
    side_placed = False
    for _ in range(16):
        state = game.state
        if state.is_closed:
            break
        if state.phase is Phase.SIDE_BETS:
            if not side_placed:
                side_placed = True
                game.run(c.PlaceSideBet(1, _PLAYER, funds))
            else:
                game.run(c.CloseSideBets())
        elif state.turn == 1:
            draw = strategy.player_action(profile, _taem(state.cards(1))) == "draw"
            game.run(c.Draw(1, _PLAYER) if draw else c.Stay(1, _PLAYER))
        elif state.phase is Phase.BANKER_TURN:
            draw = strategy.banker_action(profile, _taem(state.cards(BANKER))) == "draw"
            game.run(c.BankerDraw(banker) if draw else c.BankerStay(banker))
        else:
            raise RuntimeError(f"the round is stuck in {state.phase.value}")
    if not game.state.is_closed:
        raise RuntimeError("the round did not close")


def _played(game: _Game, profile: Profile) -> Played:
    """Seat 1's stake as it settled (ante: its hand by ``ante_type``), and the side bet's net if placed."""
    settled = [ev for ev in game.history if isinstance(ev, e.BetSettled) and ev.seat == 1]
    sides = [ev for ev in game.history if isinstance(ev, e.SideBetsSettled)]
    side_net = sides[0].results[0][3] if sides and sides[0].results else None
    bet = settled[0]
    hand = bet.hand
    if profile.comparison is Comparison.ANTE:
        hand = ante_type(evaluate(profile, game.state.cards(1)))
    return Played(bet.net, bet.outcome, hand, side_net)


def _taem(cards: Sequence[Card]) -> int:
    return sum(card.points for card in cards) % 10


def _mean_estimate(total: int, total_sq: int, n: int, scale: int) -> tuple[Estimate, float]:
    mean = Fraction(total, n * scale)
    var = Fraction(total_sq, n * scale * scale) - mean * mean
    if n > 1:
        var = var * n / (n - 1)
    sd = math.sqrt(max(var, Fraction(0)))
    se = sd / math.sqrt(n)
    value = float(mean)
    return Estimate(value, value - Z95 * se, value + Z95 * se, se), sd


def _proportion(hits: int, n: int) -> Estimate:
    """Wilson score interval; ``se`` is the binomial standard error at the observed proportion."""
    p = hits / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), math.sqrt(p * (1 - p) / n))


def simulate(
    profile: str | Profile,
    rounds: int,
    seed: str | int,
    strategy: StrategyLike = "reference",
    *,
    stake: int = EXACT_STAKE,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """Play ``rounds`` whole rounds through the state machine and estimate the exact figures.

    Round ``i`` is shuffled from server seed ``round_server_seed(seed, i)``, client seed
    ``"sim:<seed>"`` and nonce ``i``: the same arguments give the same result. One player
    stakes ``stake`` on seat 1 (ante: on position 1) and plays ``strategy``; under kingmaker
    it also places a side bet whenever offered (reported on its own). ``progress(done)`` is
    called every 1% of the rounds.
    """
    rules = get_profile(profile)
    if rounds < 2:
        raise ValueError("simulate at least two rounds")
    chosen = resolve_strategy(rules, strategy)
    seed_text = str(seed)
    tally = _play_rounds(rules, chosen, rounds, seed_text, stake, progress)
    return _estimates(rules, chosen, seed_text, stake, tally)


@dataclass
class _Tally:
    """What the simulated rounds add up to: the nets and their squares, outcomes, hands, side bets."""

    rounds: int = 0
    total: int = 0
    total_sq: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {"player_wins": 0, "tie": 0, "banker_wins": 0})
    hands: dict[str, int] = field(default_factory=dict)
    sides: int = 0
    side_total: int = 0
    side_sq: int = 0

    def add(self, played: Played) -> None:
        self.rounds += 1
        self.total += played.net
        self.total_sq += played.net * played.net
        self.outcomes[played.outcome] += 1
        self.hands[played.hand] = self.hands.get(played.hand, 0) + 1
        if played.side_net is not None:
            self.sides += 1
            self.side_total += played.side_net
            self.side_sq += played.side_net * played.side_net


def _play_rounds(
    rules: Profile,
    strategy: Strategy,
    rounds: int,
    seed_text: str,
    stake: int,
    progress: Callable[[int], None] | None,
) -> _Tally:
    """Rounds ``0 .. rounds - 1``, each from its own server seed, ``progress`` told every 1%."""
    tally = _Tally()
    step = max(1, rounds // 100)
    for i in range(rounds):
        tally.add(play_round(rules, strategy, round_server_seed(seed_text, i), seed_text, i, stake))
        if progress is not None and ((i + 1) % step == 0 or i + 1 == rounds):
            progress(i + 1)
    return tally


def _estimates(rules: Profile, strategy: Strategy, seed_text: str, stake: int, tally: _Tally) -> SimulationResult:
    """The figures the tally estimates, each with its 95% confidence interval."""
    rounds = tally.rounds
    mean, sd = _mean_estimate(tally.total, tally.total_sq, rounds, stake)
    rtp = Estimate(1 + mean.value, 1 + mean.low, 1 + mean.high, mean.se)
    side_rtp = None
    if tally.sides >= 2:
        side_mean, _ = _mean_estimate(tally.side_total, tally.side_sq, tally.sides, stake)
        side_rtp = Estimate(1 + side_mean.value, 1 + side_mean.low, 1 + side_mean.high, side_mean.se)
    order = _hand_order(rules)
    hands = tally.hands
    return SimulationResult(
        profile=rules.key,
        strategy=strategy,
        strategy_text=strategy.describe(rules),
        rounds=rounds,
        seed=seed_text,
        stake=stake,
        rtp=rtp,
        win=_proportion(tally.outcomes["player_wins"], rounds),
        tie=_proportion(tally.outcomes["tie"], rounds),
        loss=_proportion(tally.outcomes["banker_wins"], rounds),
        sd=sd,
        hand_types=tuple(
            (name, _proportion(hands[name], rounds)) for name in sorted(hands, key=lambda h: order.get(h, len(order)))
        ),
        side_bets=tally.sides,
        side_bet_rtp=side_rtp,
    )


def _hand_order(profile: Profile) -> dict[str, int]:
    """Hand-type names best first, as the exact tables list them."""
    names = [
        "pok deng",
        "pok",
        "tong",
        "straight flush",
        "straight",
        "sam lueang",
        "sam deng",
        "song deng",
        "normal",
        "taem",
    ]
    if profile.comparison is Comparison.ANTE:
        names = ["9 special", "9 plain", "8 special", "8 plain", "AK flush", "special pair"]
        names += ["face-card combination", "10 and face card", "zero flush"]
        names += [f"{p} {kind}" for p in range(7, -1, -1) for kind in ("special", "plain")]
    return {name: i for i, name in enumerate(names)}
