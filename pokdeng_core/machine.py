"""The round as a pure state machine: ``decide(state, command) -> events``, ``evolve(state, event) -> state``.

``decide`` checks a command against the rules and returns the events it causes,
including every automatic step that follows (automatic draws, the banker's
automatic play, settlement, the seed's reveal and the close), so that the shell
saves them in one transaction. A refused command raises a ``DomainError`` and
returns nothing. ``evolve`` folds one event into the state and never refuses.
``decide_and_fold`` gives both at once, a ``Decision(events, state)``: the state after the
events, as the decision folded them (so the shell records the events and keeps the state).
Nothing here keeps anything between calls: every function is a function of its arguments.

This module is the machine's one table (``_STEPS``: each round command's handler, and when
``legal_commands`` lists it) and its entry points. The round's parts live beside it, each a
module of one job:

* ``round_state``: the state (``RoundState``, ``Phase``, ``Bet``, ``Shoe``) and the shoe's
  attachment (``attach_shoe``);
* ``round_evolve``: each event's fold (``evolve``, ``replay``);
* ``round_deciding``: what the handlers share (``RoundRun``, the phase a command needs, funds);
* the handlers by the round's course: ``round_opening``, ``round_betting``, ``round_dealing``
  (the deal and the automatic play), ``round_turns``, ``round_ending`` (showdown, settlement,
  the seed's reveal and the close, or a void);
* ``round_legal``: the predicates of ``legal_commands``;
* ``round_cards``: the cached card notation and hand totals of the hot path.

The state and the fold are importable from here too (``from pokdeng_core.machine import
RoundState, evolve``): they are the machine's arguments and its other half.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from . import commands as c
from . import deciding
from . import events as e
from .deciding import Decision as Decision  # (re-exported: its old home)
from .errors import DomainError
from .limits import MAX_CLIENT_SEED as MAX_CLIENT_SEED  # (re-exported: its old home)
from .round_betting import contribute_seed, place_bet
from .round_dealing import deal
from .round_deciding import RoundRun
from .round_ending import void_round
from .round_evolve import evolve as evolve  # (re-exported: the machine's other half)
from .round_evolve import replay as replay
from .round_legal import (
    banker_chooses,
    may_bet,
    may_close_side_bets,
    may_contribute,
    may_deal,
    may_reveal,
    may_side_bet,
    may_time_out,
    may_void,
    player_chooses,
)
from .round_opening import open_round
from .round_state import BANKER as BANKER  # (re-exported: the state the machine decides on)
from .round_state import Bet as Bet
from .round_state import Phase as Phase
from .round_state import RoundState as RoundState
from .round_state import Shoe as Shoe
from .round_state import attach_shoe as attach_shoe
from .round_state import attach_stacked_shoe as attach_stacked_shoe
from .round_state import shoe_client_seed as shoe_client_seed
from .round_turns import (
    banker_play,
    banker_reveal,
    close_side_bets,
    draw,
    place_side_bet,
    stay,
    time_out_turn,
)


def decide(state: RoundState, command: c.RoundCommand) -> tuple[e.RoundEvent, ...]:
    """The events ``command`` causes in ``state``; raises ``DomainError`` (and records nothing) if refused."""
    return decide_and_fold(state, command).events


def decide_and_fold(state: RoundState, command: c.RoundCommand) -> Decision[RoundState, e.RoundEvent]:
    """``decide``, and the state after folding its events: ``events, after = decide_and_fold(state, command)``.

    ``after`` is what ``replay(events, state)`` gives, computed once along the way (the shell
    records the events and keeps ``after`` instead of folding them again).
    """
    return deciding.decide_and_fold(_HANDLERS, RoundRun(state, evolve), command, "round")


class _Step(NamedTuple):
    """A round command's handler, and when it is legal for whom (None: never listed)."""

    decide: Callable[[RoundRun, Any], None]
    legal: Callable[[RoundState, int | None], bool] | None


_STEPS: Mapping[type[c.RoundCommand], _Step] = MappingProxyType(
    {  # in the order legal_commands lists them
        c.OpenRound: _Step(open_round, None),  # (the table's StartRound opens a round: never a move in one)
        c.PlaceBet: _Step(place_bet, may_bet),
        c.Deal: _Step(deal, may_deal),
        c.ContributeSeed: _Step(contribute_seed, may_contribute),
        c.PlaceSideBet: _Step(place_side_bet, may_side_bet),
        c.CloseSideBets: _Step(close_side_bets, may_close_side_bets),
        c.Draw: _Step(draw, player_chooses),
        c.Stay: _Step(stay, player_chooses),
        c.TimeOutTurn: _Step(time_out_turn, may_time_out),
        c.BankerReveal: _Step(banker_reveal, may_reveal),
        c.BankerDraw: _Step(banker_play, banker_chooses),
        c.BankerStay: _Step(banker_play, banker_chooses),
        c.VoidRound: _Step(void_round, may_void),
    }
)
"""Every round command: the one table of the machine (its handlers, ``legal_commands``, ``COMMANDS``)."""

_HANDLERS: Mapping[type[c.RoundCommand], Callable[[RoundRun, Any], None]] = MappingProxyType(
    {kind: step.decide for kind, step in _STEPS.items()}
)
_LEGAL = tuple((kind.name, step.legal) for kind, step in _STEPS.items() if step.legal is not None)
_IDLE = frozenset({Phase.NEW, Phase.SHOWDOWN, Phase.SETTLED, Phase.CLOSED})  # nobody may do anything

COMMANDS: tuple[type[c.RoundCommand], ...] = tuple(_STEPS)
"""Every round command type the machine decides."""
LISTED_COMMANDS: tuple[str, ...] = tuple(name for name, _ in _LEGAL)
"""The names ``legal_commands`` may give (every command but the opening), in the order it lists them."""


def legal_commands(state: RoundState, seat: int | None = None) -> tuple[str, ...]:
    """What may be asked now: by the holder of ``seat`` (0: the banker), or by the operator (None)."""
    if state.phase in _IDLE:
        return ()
    return tuple(name for name, legal in _LEGAL if legal(state, seat))


def can(state: RoundState, command: c.RoundCommand) -> bool:
    """Whether ``command`` would be accepted now (pokerkit's ``can_x``)."""
    try:
        decide(state, command)
    except DomainError:
        return False
    return True


def wallet_changes(state: RoundState) -> dict[str, int]:
    """Each wallet's net for a settled round (empty before settlement or for a voided round)."""
    return dict(state.nets) if state.outcome == "settled" else {}
