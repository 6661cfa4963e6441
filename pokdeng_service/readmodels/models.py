"""The read models' record types: what the queries return and the rows the projection keeps.

Views (all derived, all rebuildable from the log):

* **round history** (``pokdeng_round_history`` + ``pokdeng_round_players``): one row per closed
  round — round id, table id, round number, profile, outcome (``settled``/``voided``), every wallet
  with money in it and its net, the banker (None: the house), the house's net and commission,
  opened and closed times, and the log position of its ``round_closed``: :class:`RoundSummary`
  (with a :class:`PlayerResult` per wallet).
* **wallet statement** (``pokdeng_wallet_statement`` + ``pokdeng_wallets``): every movement of a
  wallet with its running balance (``pokdeng_service.application.views.StatementLine``, line for
  line what ``PokdengApp.wallet_statement`` gives) and its :class:`WalletBalance`.
* **open rounds** (``pokdeng_open_rounds``): rounds started and not closed, with the kind and log
  position of their last event (:class:`OpenRound`); after a restart they are the rounds to resume
  or void.
* **house ledger** (``pokdeng_house_ledger``): per table, the sum of ``house_net`` and ``commission``
  over the table's ``round_finished`` facts (the same figures as the round's ``round_settled``;
  only the table's are counted, so nothing is counted twice): :class:`HouseTotals`.
* **tables directory** (``pokdeng_tables``): one row per table, from its ``table_opened`` fact
  (profile, stakes, seats, currency) and its ``round_started``/``round_finished`` facts (the
  latest round number started, the round in play, how many rounds finished): :class:`TableSummary`.
  The wallets directory is ``pokdeng_wallets`` (above), listed by wallet id.

The list queries return :class:`RoundsPage` where a page is read from several logs (partitions):
its ``next_cursor`` is what to pass back for the next page (``paging`` says how it is made).

The working rows (``RoundFold``, ``WalletFold``, ``HouseFold``, ``TableFold``) are what the fold (``fold``)
accumulates and the recorders store; they are plain data, with no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

# --- what the queries return -----------------------------------------------------------------


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


class PlayerResult(_View):
    """A wallet with money in a round: what it staked (main and side bets) and its net."""

    player: str
    staked: int
    net: int


class RoundSummary(_View):
    round_id: str
    table_id: str
    round_no: int
    profile: str
    profile_version: int
    outcome: str  # "settled" or "voided"
    banker: str | None  # None: the house
    players: tuple[PlayerResult, ...]
    house_net: int
    commission: int
    opened_at: str
    closed_at: str
    opened_position: int
    closed_position: int  # the log position of the round's round_closed


class OpenRound(_View):
    round_id: str
    table_id: str
    round_no: int
    last_kind: str  # the kind of the round's last event ("bet_placed", "cards_dealt", ...)
    last_position: int  # its log position
    version: int  # the round stream's version after it
    started_at: str
    started_position: int


class HouseTotals(_View):
    house_net: int
    commission: int
    rounds: int
    settled: int
    voided: int


class WalletBalance(_View):
    wallet_id: str
    balance: int
    reserved: int
    available: int
    version: int
    currency: str = "THB"  # from the wallet's Opened event ("THB" for wallets opened before currencies)


class TableSummary(_View):
    table_id: str
    profile: str
    profile_version: int
    seats: int  # how many seats the table has
    min_stake: int
    max_stake: int
    opened_at: str
    opened_position: int  # the log position of its table_opened
    round_no: int  # the number of the latest round started (0: none yet)
    current_round_id: str | None  # the round in play (None between rounds)
    rounds_closed: int  # rounds finished (settled or voided)
    currency: str


class RoundsPage(_View):
    """A page of closed rounds, newest first, and where the next page starts.

    ``next_cursor``: None when there are no more rounds; else one log position per partition
    (``ReadModels``: one) to pass back unchanged, with the same filters, as ``cursor``. Entry ``k``
    bounds partition ``k``'s rounds to ``closed_position < entry`` (0: no bound yet).
    """

    rounds: tuple[RoundSummary, ...]
    next_cursor: tuple[int, ...] | None


# --- the projection's working state ----------------------------------------------------------


@dataclass
class RoundFold:
    """An open round as the projection accumulates it (``info`` in the open-rounds table)."""

    round_id: str
    table_id: str
    started_position: int
    started_at: str
    round_no: int = 0
    profile: str = ""
    profile_version: int = 0
    banker: str | None = None
    last_kind: str = ""
    last_position: int = 0
    version: int = 0
    staked: dict[str, int] = field(default_factory=dict)
    nets: dict[str, int] = field(default_factory=dict)
    house_net: int = 0
    commission: int = 0

    def info(self) -> str:
        return json.dumps(
            {
                "profile": self.profile,
                "profile_version": self.profile_version,
                "banker": self.banker,
                "staked": list(self.staked.items()),
                "nets": list(self.nets.items()),
                "house_net": self.house_net,
                "commission": self.commission,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> RoundFold:
        round_id, table_id, round_no, last_kind, last_position, version, started_position, started_at, info = row
        data = json.loads(info)
        return cls(
            round_id=round_id,
            table_id=table_id,
            started_position=started_position,
            started_at=started_at,
            round_no=round_no,
            profile=data["profile"],
            profile_version=data["profile_version"],
            banker=data["banker"],
            last_kind=last_kind,
            last_position=last_position,
            version=version,
            staked={p: s for p, s in data["staked"]},
            nets={p: n for p, n in data["nets"]},
            house_net=data["house_net"],
            commission=data["commission"],
        )

    def copy(self) -> RoundFold:
        clone = RoundFold(**{k: v for k, v in self.__dict__.items()})
        clone.staked = dict(self.staked)
        clone.nets = dict(self.nets)
        return clone

    def as_open(self) -> OpenRound:
        return OpenRound(
            round_id=self.round_id,
            table_id=self.table_id,
            round_no=self.round_no,
            last_kind=self.last_kind,
            last_position=self.last_position,
            version=self.version,
            started_at=self.started_at,
            started_position=self.started_position,
        )


@dataclass
class WalletFold:
    key: str  # the wallet's aggregate id, hex
    wallet_id: str
    balance: int = 0
    reserved: int = 0
    version: int = 0
    position: int = 0
    currency: str = "THB"

    def as_balance(self) -> WalletBalance:
        return WalletBalance(
            wallet_id=self.wallet_id,
            balance=self.balance,
            reserved=self.reserved,
            available=self.balance - self.reserved,
            version=self.version,
            currency=self.currency,
        )


@dataclass
class TableFold:
    """A table as the projection keeps it (a row of ``pokdeng_tables``, columns in this order)."""

    table_id: str
    profile: str = ""
    profile_version: int = 0
    seats: int = 0
    min_stake: int = 0
    max_stake: int = 0
    opened_at: str = ""
    opened_position: int = 0
    round_no: int = 0
    current_round_id: str | None = None
    rounds_closed: int = 0
    currency: str = "THB"
    position: int = 0  # the log position of its last fact the view used

    def row(self) -> tuple[Any, ...]:
        return tuple(self.__dict__[name] for name in TABLE_FIELDS)

    def as_summary(self) -> TableSummary:
        return TableSummary(**{k: v for k, v in self.__dict__.items() if k != "position"})


@dataclass
class HouseFold:
    house_net: int = 0
    commission: int = 0
    rounds: int = 0
    settled: int = 0
    voided: int = 0
    position: int = 0


TABLE_FIELDS: tuple[str, ...] = tuple(TableFold.__dataclass_fields__)

__all__ = ["HouseTotals", "OpenRound", "PlayerResult", "RoundSummary", "RoundsPage", "TableSummary", "WalletBalance"]
