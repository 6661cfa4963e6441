"""The round's commands: what a participant or the operator asks for, in the imperative.

Funds are facts from outside the pure core: a command that reserves money carries
the wallet's available balance as the shell read it, and the shell saves the
reservation together with the round's events, so a stale balance is a conflict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from .profiles import Profile


def snake_case(name: str) -> str:
    """A command's name from its type's: ``PlaceBet`` -> ``place_bet`` (the service's commands are named alike)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True, slots=True)
class RoundCommand:
    """A command to the round. Its ``name`` is its type's in snake case (``PlaceBet.name == "place_bet"``):
    what ``machine.legal_commands`` lists, the API's ``CommandKind`` (``COMMAND_KIND_PLACE_BET``) and the
    service's command of the same name."""

    name: ClassVar[str] = "round_command"

    def __init_subclass__(cls) -> None:  # (no zero-argument super() in a slotted dataclass: nothing to call)
        cls.name = snake_case(cls.__name__)


@dataclass(frozen=True, slots=True)
class OpenRound(RoundCommand):
    """Open a round: seats and banker from the table, the shuffle committed before any card."""

    round_id: str
    table_id: str
    round_no: int
    profile: Profile
    seats: tuple[tuple[int, str | None], ...]
    banker_player: str | None
    min_stake: int
    max_stake: int
    commitment: str
    client_seed: str
    nonce: int
    algorithm: str
    client_seed_rule: str = ""
    """``""``: ``client_seed`` is the shuffle's client seed, recorded with the commitment (the rounds of
    engines before 1.1.0). ``shuffle.CLIENT_SEED_RULE``: the client seed is derived at the deal from the
    contributions made during betting, and ``client_seed`` (if not empty) is the platform's first one."""
    currency: str = "THB"  # ISO 4217: the table's currency, recorded in round_opened
    by: str = ""  # who starts it (StartRound's sender): recorded in round_opened


@dataclass(frozen=True, slots=True)
class PlaceBet(RoundCommand):
    seat: int
    player: str
    stake: int
    available: int  # the player's wallet: balance less what is reserved
    banker_available: int | None = None  # a player-banker's wallet, the same way
    client_seed: str | None = None  # the bettor's contribution to the client seed, with the stake
    by: str = ""  # its sender, when not the bettor itself (an operator, the service): recorded in bet_placed


@dataclass(frozen=True, slots=True)
class ContributeSeed(RoundCommand):
    """Contribute to the round's client seed during betting: a bettor or the player-banker (``player``),
    or the platform (``player`` None). A contributor's last contribution before the deal counts."""

    player: str | None
    client_seed: str
    by: str = ""  # its sender, when not the contributor itself (the platform's: always): in client_seed_contributed


@dataclass(frozen=True, slots=True)
class Deal(RoundCommand):
    """Close betting and deal."""

    by: str = ""  # who deals (an operator, the service): recorded in cards_dealt


@dataclass(frozen=True, slots=True)
class PlaceSideBet(RoundCommand):
    seat: int
    player: str
    available: int
    by: str = ""  # its sender, when not the bettor itself: recorded in side_bet_placed


@dataclass(frozen=True, slots=True)
class CloseSideBets(RoundCommand):
    by: str = ""  # who closed them: recorded in side_bets_settled


@dataclass(frozen=True, slots=True)
class Draw(RoundCommand):
    seat: int
    player: str
    by: str = ""  # its sender, when not the seat's holder itself: recorded in card_drawn


@dataclass(frozen=True, slots=True)
class Stay(RoundCommand):
    seat: int
    player: str
    by: str = ""  # its sender, when not the seat's holder itself: recorded in player_stood


@dataclass(frozen=True, slots=True)
class BankerReveal(RoundCommand):
    """The banker shows and settles chosen hands against its two cards before it draws."""

    seats: tuple[int, ...]
    player: str | None = None  # the player-banker, or None when the operator acts for the house
    by: str = ""  # its sender, when not the player-banker itself (the house's: always): in hands_revealed


@dataclass(frozen=True, slots=True)
class BankerDraw(RoundCommand):
    player: str | None = None
    by: str = ""  # its sender, when not the player-banker itself (the house's: always): in card_drawn


@dataclass(frozen=True, slots=True)
class BankerStay(RoundCommand):
    player: str | None = None
    by: str = ""  # its sender, when not the player-banker itself (the house's: always): in player_stood


@dataclass(frozen=True, slots=True)
class TimeOutTurn(RoundCommand):
    """The table's turn timer ran out for whoever is to act: the automatic action applies."""

    by: str = ""  # who sent it (an operator, the turn clock): recorded in turn_timed_out


@dataclass(frozen=True, slots=True)
class VoidRound(RoundCommand):
    reason: str
    by: str = ""  # who voids it: recorded in round_voided
