"""The SQL views' tables (DDL shared by SQLite and PostgreSQL) and the conversions of their rows.

Tables (beside the tracking table, in the application's store: the same SQLite file, the same
PostgreSQL database and schema): ``pokdeng_open_rounds``, ``pokdeng_round_history`` and
``pokdeng_round_players``, ``pokdeng_wallets`` and ``pokdeng_wallet_statement``,
``pokdeng_house_ledger``, ``pokdeng_tables`` (``models`` says what each holds). Statements are
written once with ``%s`` placeholders and ``{table}`` names; ``{bytewise}`` marks the text
columns that are compared or ordered as text (ids listed in order, ``closed_at``): PostgreSQL
gives them ``COLLATE "C"`` (code point order, as SQLite's default and Python's ``str``), whatever
the database's locale. A change here needs a new ``recorder.VIEWS_VERSION``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.models import TABLE_FIELDS, PlayerResult, RoundSummary

VIEW_TABLES = (
    "pokdeng_open_rounds",
    "pokdeng_round_history",
    "pokdeng_round_players",
    "pokdeng_wallets",
    "pokdeng_wallet_statement",
    "pokdeng_house_ledger",
    "pokdeng_tables",
)
CREATE = (
    "CREATE TABLE IF NOT EXISTS {pokdeng_open_rounds} ("
    "round_id TEXT PRIMARY KEY, table_id TEXT NOT NULL, round_no BIGINT NOT NULL, last_kind TEXT NOT NULL, "
    "last_position BIGINT NOT NULL, version BIGINT NOT NULL, started_position BIGINT NOT NULL, "
    "started_at TEXT NOT NULL, info TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pokdeng_open_rounds_by_table ON {pokdeng_open_rounds} (table_id, started_position)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_round_history} ("
    "round_id TEXT PRIMARY KEY, table_id TEXT NOT NULL, round_no BIGINT NOT NULL, profile TEXT NOT NULL, "
    "profile_version BIGINT NOT NULL, outcome TEXT NOT NULL, banker TEXT, house_net BIGINT NOT NULL, "
    "commission BIGINT NOT NULL, players TEXT NOT NULL, opened_at TEXT NOT NULL, closed_at TEXT{bytewise} NOT NULL, "
    "opened_position BIGINT NOT NULL, closed_position BIGINT NOT NULL UNIQUE)",
    "CREATE INDEX IF NOT EXISTS pokdeng_round_history_by_table ON {pokdeng_round_history} (table_id, closed_position)",
    "CREATE INDEX IF NOT EXISTS pokdeng_round_history_by_time ON {pokdeng_round_history} (closed_at, closed_position)",
    "CREATE INDEX IF NOT EXISTS pokdeng_round_history_by_outcome ON {pokdeng_round_history} (outcome, closed_position)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_round_players} ("
    "player TEXT NOT NULL, closed_position BIGINT NOT NULL, round_id TEXT NOT NULL, table_id TEXT NOT NULL, "
    "PRIMARY KEY (player, closed_position))",
    "CREATE TABLE IF NOT EXISTS {pokdeng_wallets} ("
    "wallet_key TEXT PRIMARY KEY, wallet_id TEXT{bytewise} NOT NULL, balance BIGINT NOT NULL, "
    "reserved BIGINT NOT NULL, version BIGINT NOT NULL, position BIGINT NOT NULL, currency TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pokdeng_wallets_by_id ON {pokdeng_wallets} (wallet_id)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_wallet_statement} ("
    "wallet_key TEXT NOT NULL, version BIGINT NOT NULL, position BIGINT NOT NULL, kind TEXT NOT NULL, "
    "amount BIGINT NOT NULL, reserved_change BIGINT NOT NULL, balance_after BIGINT NOT NULL, "
    "round_id TEXT NOT NULL, reference TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (wallet_key, version))",
    "CREATE TABLE IF NOT EXISTS {pokdeng_house_ledger} ("
    "table_id TEXT PRIMARY KEY, house_net BIGINT NOT NULL, commission BIGINT NOT NULL, rounds BIGINT NOT NULL, "
    "settled BIGINT NOT NULL, voided BIGINT NOT NULL, position BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_tables} ("
    "table_id TEXT{bytewise} PRIMARY KEY, profile TEXT NOT NULL, profile_version BIGINT NOT NULL, "
    "seats BIGINT NOT NULL, min_stake BIGINT NOT NULL, max_stake BIGINT NOT NULL, opened_at TEXT NOT NULL, "
    "opened_position BIGINT NOT NULL, round_no BIGINT NOT NULL, current_round_id TEXT, "
    "rounds_closed BIGINT NOT NULL, currency TEXT NOT NULL, position BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pokdeng_tables_by_profile ON {pokdeng_tables} (profile, table_id)",
)
ROUND_COLUMNS = "round_id, table_id, round_no, last_kind, last_position, version, started_position, started_at, info"
HISTORY_COLUMNS = (
    "round_id, table_id, round_no, profile, profile_version, outcome, banker, house_net, commission, players, "
    "opened_at, closed_at, opened_position, closed_position"
)
HISTORY_NAMES = tuple(c.strip() for c in HISTORY_COLUMNS.split(","))
LINE_COLUMNS = "version, kind, amount, reserved_change, balance_after, round_id, reference, at"
WALLET_COLUMNS = "wallet_key, wallet_id, balance, reserved, version, position, currency"  # as ``WalletFold``'s fields
TABLE_COLUMNS = ", ".join(TABLE_FIELDS)  # as ``TableFold``'s fields


def history_row(summary: RoundSummary) -> tuple[Any, ...]:
    players = json.dumps([[p.player, p.staked, p.net] for p in summary.players], separators=(",", ":"))
    return (
        summary.round_id,
        summary.table_id,
        summary.round_no,
        summary.profile,
        summary.profile_version,
        summary.outcome,
        summary.banker,
        summary.house_net,
        summary.commission,
        players,
        summary.opened_at,
        summary.closed_at,
        summary.opened_position,
        summary.closed_position,
    )


def summary_from_row(row: Sequence[Any]) -> RoundSummary:
    values = dict(zip(HISTORY_NAMES, row, strict=True))
    values["players"] = tuple(PlayerResult(player=p, staked=s, net=n) for p, s, n in json.loads(values["players"]))
    return RoundSummary(**values)


def line_from_row(row: Sequence[Any]) -> StatementLine:
    version, kind, amount, reserved, balance, round_id, reference, at = row
    return StatementLine(
        position=version,
        kind=kind,
        amount=amount,
        reserved_change=reserved,
        balance_after=balance,
        round_id=round_id,
        reference=reference,
        at=at,
    )
