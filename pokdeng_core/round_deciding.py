"""What the round's command handlers share: a decision in the making with the next card of the shoe, the
phase a command needs, and the funds a reservation needs.

Each handler (``round_opening``, ``round_betting``, ``round_dealing``, ``round_turns``, ``round_ending``)
checks its command against the state and emits the events it causes on a ``RoundRun`` (``deciding.Run``),
which folds each into the state at once; ``machine.py`` holds the table of them.
"""

from __future__ import annotations

from . import events as e
from .cards import Card
from .deciding import Run
from .errors import DomainError, InsufficientFunds, InvalidCommand, SealedShoe, WrongPhase
from .round_cards import card_text
from .round_state import Phase, RoundState


class RoundRun(Run[RoundState, e.RoundEvent]):
    """A round's decision in the making (``deciding.Run``), and the next card of its shoe."""

    __slots__ = ()

    def next_card(self) -> Card:
        shoe = self.state.shoe
        if shoe is None:
            raise SealedShoe("the round's shoe is sealed: attach the server seed before dealing")
        if self.state.cards_used >= len(shoe.cards):
            raise DomainError("the shoe is empty")
        return shoe.cards[self.state.cards_used]

    def next_text(self) -> str:
        return card_text(self.next_card())


def require_phase(state: RoundState, *phases: Phase, doing: str) -> None:
    if state.phase not in phases:
        wanted = " or ".join(p.value for p in phases)
        raise WrongPhase(
            f"cannot {doing} now: the round is in {state.phase.value}, not {wanted}", phase=state.phase.value
        )


def check_funds(required: int, available: int | None, wallet: str, whose: str) -> None:
    if available is None:
        raise InvalidCommand(f"{whose} available funds are needed to reserve {required}", field="available")
    if available < required:
        raise InsufficientFunds(
            f"{whose} wallet {wallet!r} cannot cover {required}: {available} available",
            required=required,
            available=available,
            wallet=wallet,
        )
