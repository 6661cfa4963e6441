"""The read models in the application's PostgreSQL database (its schema): views and tracking.

The tracking table is the library's (named ``pokdeng_readmodels_tracking``), with the views' DDL
(``sql``, shared with SQLite) added to its create statements; a batch locks the tracking row
(``SELECT ... FOR UPDATE``) before it writes. Text columns that are ordered or compared as text
are ``COLLATE "C"``, so that ids and times sort as in SQLite and in memory.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from eventsourcing.persistence import OperationalError, Tracking
from eventsourcing.postgres import PostgresTrackingRecorder

from pokdeng_service.readmodels.recorder import TRACKING_TABLE
from pokdeng_service.readmodels.sql import SQLViews


class PostgresReadModelRecorder(PostgresTrackingRecorder, SQLViews):
    """Views and tracking in the application's PostgreSQL database (its schema)."""

    lock_suffix = " FOR UPDATE"
    bytewise = ' COLLATE "C"'  # ids and times ordered by code point, whatever the database's locale

    def __init__(self, datastore: Any, *, tracking_table_name: str = TRACKING_TABLE, **kwargs: Any) -> None:
        super().__init__(datastore, tracking_table_name=tracking_table_name, **kwargs)
        if not self.datastore.single_row_tracking:
            raise OperationalError("the read models need single-row tracking (SINGLE_ROW_TRACKING=y)")
        from psycopg.sql import SQL

        self.sql_create_statements.extend(SQL(s).format() for s in self._view_statements())

    def _create_table(self, curs: Any) -> None:
        super()._create_table(curs)
        self._migrate(curs)  # in the same transaction: views of another version are dropped and replayed

    def _name(self, table: str) -> str:
        if table == TRACKING_TABLE:
            table = self.tracking_table_name
        schema = self.datastore.schema.replace('"', '""')
        return f'"{schema}"."{table}"'

    def _sql(self, text: str) -> str:
        return text

    def _transaction(self, *, commit: bool) -> AbstractContextManager[Any]:
        return self.datastore.transaction(commit=commit)

    def _track(self, cursor: Any, tracking: Tracking) -> None:
        self._insert_tracking(cursor, tracking)


__all__ = ["PostgresReadModelRecorder"]
