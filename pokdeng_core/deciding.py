"""What the round's and the table's machines share: a decision that folds its events as it makes them.

A machine is a table of handlers, one per command type; a handler checks its command against the
state and ``emit``\\ s the events it causes on a ``Run``, which folds each into the state at once (so
the next check sees it). ``decide_and_fold`` runs the handler of a command and gives a
``Decision(events, state)``: the events and the state after them, as the decision folded them. A
refused command raises a ``DomainError`` and gives nothing. ``machine.py`` (the round) and
``table.py`` (the table) each bind these to their own state, events and handlers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from .errors import InvalidCommand

S = TypeVar("S")
E = TypeVar("E")
R = TypeVar("R", bound="Run[Any, Any]")


class Decision(NamedTuple, Generic[S, E]):
    """What ``decide_and_fold`` gives: the events a command causes, and the state after them (the
    machine's replay of those events from the state decided on, as the decision computed it)."""

    events: tuple[E, ...]
    state: S


class Run(Generic[S, E]):
    """Collects the events of one decision, folding each into the state (with ``fold``) as it goes."""

    __slots__ = ("events", "fold", "state")

    def __init__(self, state: S, fold: Callable[[S, E], S]) -> None:
        self.state = state
        self.fold = fold
        self.events: list[E] = []

    def emit(self, event: E) -> None:
        self.state = self.fold(self.state, event)
        self.events.append(event)


def decide_and_fold(
    handlers: Mapping[type[Any], Callable[[R, Any], None]], run: R, command: object, what: str
) -> Decision[Any, Any]:
    """Run the handler of ``command`` (by its exact type) on ``run``: the events it emitted and the state
    after them. A type without a handler is refused (``InvalidCommand``: not a ``what`` command)."""
    try:
        handler = handlers[type(command)]
    except KeyError:
        raise InvalidCommand(f"not a {what} command: {type(command).__name__}") from None
    handler(run, command)
    return Decision(tuple(run.events), run.state)
