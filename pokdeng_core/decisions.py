"""The round's decisions read back from its record: the command each run of its events says was decided.

A command's events are saved together, and the first of them says what the command was (with the
state before it for what the event leaves out: the banker, a seat's holder). ``DECISIONS`` maps the
kind of every event that starts a command to its reader; ``decision_of(run, state)`` reads one back.
Deciding that command again in that state gives the run's events again: that is how a round is
replayed from its record alone (``pokdeng_service.audit.replay``), so a reader gives back exactly
what the round decided, field for field.

What a command records first (``machine.py`` decides it):

=================  ============================================================================
event kind         the command it starts
=================  ============================================================================
round_opened       ``OpenRound`` (with its ``contributions_opened``, ``shuffle_committed`` and the
                   platform's ``client_seed_contributed`` after it, if any)
bet_placed         ``PlaceBet`` (and its stake's contribution, the ``client_seed_contributed`` after it)
client_seed_...    ``client_seed_contributed``: ``ContributeSeed``; ``client_seed_fixed``: ``Deal``
                   (the deal of a round with contributions: its ``cards_dealt`` follows)
cards_dealt        ``Deal``
side_bet_placed    ``PlaceSideBet``
side_bets_settled  ``CloseSideBets`` (a ``TimeOutTurn`` in the side bets records the same)
turn_timed_out     ``TimeOutTurn``
card_drawn         ``Draw``, or ``BankerDraw`` at seat 0 (a command's first card is a choice)
player_stood       ``Stay``, or ``BankerStay`` at seat 0
hands_revealed     ``BankerReveal`` (a selective reveal only: the showdown's follows a command)
round_voided       ``VoidRound``
=================  ============================================================================

Payloads are read as stored (JSON: lists for tuples; a field added since, absent from older
records, read as its default); only a reveal is decoded into its event first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from . import commands as c
from . import events as e
from .profiles import get_profile
from .round_state import BANKER, RoundState
from .shuffle import PLATFORM

Reader = Callable[[Sequence[e.StoredEvent], RoundState], c.RoundCommand]


def _opening(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    head = run[0]
    data = head.data
    rest = list(run[1:])
    rule = ""
    if rest and rest[0].kind == e.ContributionsOpened.kind:
        rule = rest.pop(0).data["rule"]
    shuffle = rest[0] if rest else None
    if shuffle is None or shuffle.kind != e.ShuffleCommitted.kind:
        raise ValueError(f"event {head.position} ({e.RoundOpened.kind}) is not followed by {e.ShuffleCommitted.kind}")
    committed = shuffle.data
    client_seed = committed["client_seed"]
    if rule:  # the opening's client seed is the platform's contribution after the commitment, if any
        platform = _contribution_of(rest[1]) if len(rest) > 1 else None
        client_seed = platform[1] if platform is not None and platform[0] == PLATFORM else ""
    profile = get_profile(data["profile_name"], data["profile_version"], **dict(data["profile_options"]))
    return c.OpenRound(
        data["round_id"],
        data["table_id"],
        data["round_no"],
        profile,
        tuple((seat, holder) for seat, holder in data["seats"]),
        data["banker_player"],
        data["min_stake"],
        data["max_stake"],
        committed["commitment"],
        client_seed,
        committed["nonce"],
        committed["algorithm"],
        rule,
        data.get("currency", "THB"),
        data.get("by", ""),
    )


def _bet(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    data = run[0].data
    contributed = _contribution_of(run[1]) if len(run) > 1 else None
    seed = contributed[1] if contributed is not None and contributed[0] == data["player"] else None
    return c.PlaceBet(
        data["seat"],
        data["player"],
        data["stake"],
        data["reserved"],
        data["banker_reserved"] if state.banker_player else None,
        seed,
        data.get("by", ""),
    )


def _contribution(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    data = run[0].data
    contributor = data["contributor"]
    return c.ContributeSeed(None if contributor == PLATFORM else contributor, data["client_seed"], data.get("by", ""))


def _deal_with_contributions(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    dealt = next((fact for fact in run[1:] if fact.kind == e.CardsDealt.kind), None)
    return c.Deal(dealt.data.get("by", "") if dealt is not None else "")


def _deal(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    return c.Deal(run[0].data.get("by", ""))


def _side_bet(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    data = run[0].data
    return c.PlaceSideBet(data["seat"], data["player"], data["reserved"], data.get("by", ""))


def _close_side_bets(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    return c.CloseSideBets(run[0].data.get("by", ""))


def _time_out(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    return c.TimeOutTurn(run[0].data.get("by", ""))


def _draw(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    data = run[0].data
    seat, by = data["seat"], data.get("by", "")
    return c.BankerDraw(state.banker_player, by) if seat == BANKER else c.Draw(seat, state.holder(seat) or "", by)


def _stay(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    data = run[0].data
    seat, by = data["seat"], data.get("by", "")
    return c.BankerStay(state.banker_player, by) if seat == BANKER else c.Stay(seat, state.holder(seat) or "", by)


def _reveal(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    head = run[0]
    revealed = e.HandsRevealed(**{key: _tuples(value) for key, value in head.data.items()})
    if not revealed.selective:  # the showdown's reveal follows another command's events
        raise _starts_nothing(head)
    return c.BankerReveal(revealed.seats, state.banker_player, revealed.by)


def _void(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    data = run[0].data
    return c.VoidRound(data["reason"], data.get("by", ""))


DECISIONS: Mapping[str, Reader] = MappingProxyType(
    {
        e.RoundOpened.kind: _opening,
        e.BetPlaced.kind: _bet,
        e.ClientSeedContributed.kind: _contribution,
        e.ClientSeedFixed.kind: _deal_with_contributions,
        e.CardsDealt.kind: _deal,
        e.SideBetPlaced.kind: _side_bet,
        e.SideBetsSettled.kind: _close_side_bets,
        e.TurnTimedOut.kind: _time_out,
        e.CardDrawn.kind: _draw,
        e.PlayerStood.kind: _stay,
        e.HandsRevealed.kind: _reveal,
        e.RoundVoided.kind: _void,
    }
)
"""The reader of each event kind that starts a command: the command, from the run it starts and the state
before it."""


def decision_of(run: Sequence[e.StoredEvent], state: RoundState) -> c.RoundCommand:
    """The command that caused ``run`` (one command's events, in order), read from its first event and the
    state before it; ``ValueError`` if that event starts no command."""
    head = run[0]
    reader = DECISIONS.get(head.kind)
    if reader is None:
        raise _starts_nothing(head)
    return reader(run, state)


def _starts_nothing(head: e.StoredEvent) -> ValueError:
    return ValueError(f"event {head.position} ({head.kind}) does not start a command")


def _contribution_of(fact: e.StoredEvent) -> tuple[str, str] | None:
    """(contributor, client seed) of a ``client_seed_contributed`` event, or None for another kind."""
    if fact.kind != e.ClientSeedContributed.kind:
        return None
    return fact.data["contributor"], fact.data["client_seed"]


def _tuples(value: Any) -> Any:
    """A stored value with its lists as tuples (as the event's own fields hold them)."""
    if isinstance(value, list | tuple):
        return tuple(_tuples(item) for item in value)
    return value
