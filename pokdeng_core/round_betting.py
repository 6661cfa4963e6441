"""Betting: a stake on a seat (``PlaceBet``, with the bettor's client seed in a round with contributions)
and a contribution to the client seed (``ContributeSeed``), each checked against the table's limits and
the wallets' funds.
"""

from __future__ import annotations

from . import commands as c
from . import events as e
from .errors import DomainError, InvalidCommand, NotYourTurn
from .limits import check_id, client_seed_problem
from .round_deciding import RoundRun, check_funds, require_phase
from .round_state import Phase, RoundState
from .settlement import StakeError, check_stake
from .shuffle import PLATFORM


def _stake(state: RoundState, stake: int, what: str = "stake") -> int:
    try:
        amount = check_stake(state.rules, stake, what)
    except StakeError as error:
        raise InvalidCommand(str(error), field=what) from None
    if not state.min_stake <= amount <= state.max_stake:
        raise InvalidCommand(
            f"{what} {amount} is outside the table's limits {state.min_stake}..{state.max_stake}", field=what
        )
    return amount


def place_bet(run: RoundRun, cmd: c.PlaceBet) -> None:
    state = run.state
    require_phase(state, Phase.BETTING, doing="place a bet")
    profile = state.rules
    holder = state.holder(cmd.seat)
    if holder is None or cmd.player != holder:  # a seat's holder was checked when the round opened
        check_id(cmd.player, "player")
    if cmd.player == state.banker_player:
        raise DomainError("the banker cannot bet against itself")
    if holder is not None and holder != cmd.player and profile.name != "classic":
        raise NotYourTurn(f"seat {cmd.seat} belongs to another player", seat=cmd.seat)
    if any(b.seat == cmd.seat and b.player == cmd.player for b in state.bets):
        raise DomainError(f"{cmd.player!r} already has a stake on seat {cmd.seat}", seat=cmd.seat)
    stake = _stake(state, cmd.stake)
    reserve = stake * profile.reserve_multiple
    check_funds(reserve, cmd.available, cmd.player, "the player's")
    banker_reserve = 0
    if state.banker_player is not None:
        banker_reserve = stake * profile.reserve_multiple
        check_funds(banker_reserve, cmd.banker_available, state.banker_player, "the banker's")
    if cmd.client_seed is not None:
        _check_contribution(state, cmd.client_seed)
    run.emit(e.BetPlaced(cmd.seat, cmd.player, stake, reserve, banker_reserve, cmd.by))
    if cmd.client_seed is not None:  # (its sender is the bet's: bet_placed.by)
        run.emit(e.ClientSeedContributed(cmd.player, cmd.client_seed))


def _check_contribution(state: RoundState, client_seed: str) -> None:
    """A contribution fits the round: it takes contributions, and the seed is 1 to 256 characters."""
    if not state.client_seed_rule:
        raise DomainError("this round's client seed was given at its opening: it takes no contributions")
    problem = client_seed_problem(client_seed, required=True)
    if problem is not None:
        raise InvalidCommand(problem, field="client_seed")


def contribute_seed(run: RoundRun, cmd: c.ContributeSeed) -> None:
    state = run.state
    require_phase(state, Phase.BETTING, doing="contribute a client seed")
    _check_contribution(state, cmd.client_seed)
    player = cmd.player
    if player is not None:
        check_id(player, "player")
        if player != state.banker_player and not any(b.player == player for b in state.bets):
            raise NotYourTurn(f"{player!r} has no stake in this round: its bettors contribute (and the platform)")
    run.emit(e.ClientSeedContributed(PLATFORM if player is None else player, cmd.client_seed, cmd.by))
