"""A store's raw rows, edited as a forger with write access to the database would (tampering tests)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg


class StoredRows:
    """The stored rows of any stream, events or snapshots, in SQLite or PostgreSQL."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.postgres = env["PERSISTENCE_MODULE"].endswith("postgres")

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        if self.postgres:
            with psycopg.connect(
                dbname=self.env["POSTGRES_DBNAME"],
                host=self.env["POSTGRES_HOST"],
                port=int(self.env["POSTGRES_PORT"]),
                user=self.env["POSTGRES_USER"],
                password=self.env["POSTGRES_PASSWORD"],
                autocommit=True,
            ) as conn:
                yield conn.cursor()
        else:
            lite = sqlite3.connect(self.env["SQLITE_DBNAME"])
            try:
                yield lite.cursor()
                lite.commit()
            finally:
                lite.close()

    def _table(self, snapshots: bool) -> str:
        if not self.postgres:
            return "stored_snapshots" if snapshots else "stored_events"
        name = "pokdeng_snapshots" if snapshots else "pokdeng_events"
        schema = self.env.get("POSTGRES_SCHEMA")
        return f'"{schema}".{name}' if schema else name

    def _key(self, uuid: UUID) -> Any:
        return uuid if self.postgres else uuid.hex

    @property
    def _m(self) -> str:
        return "%s" if self.postgres else "?"

    def read(self, uuid: UUID, snapshots: bool = False) -> list[tuple[int, str, dict[str, Any]]]:
        with self._cursor() as cur:
            cur.execute(
                f"SELECT originator_version, topic, state FROM {self._table(snapshots)} "
                f"WHERE originator_id = {self._m} ORDER BY originator_version",
                (self._key(uuid),),
            )
            return [(v, t, json.loads(bytes(s))) for v, t, s in cur.fetchall()]

    def write(self, uuid: UUID, version: int, state: dict[str, Any], snapshots: bool = False) -> None:
        m = self._m
        with self._cursor() as cur:
            cur.execute(
                f"UPDATE {self._table(snapshots)} SET state = {m} "
                f"WHERE originator_id = {m} AND originator_version = {m}",
                (json.dumps(state).encode(), self._key(uuid), version),
            )
            assert cur.rowcount == 1

    def delete(self, uuid: UUID, version: int | None = None) -> None:
        m = self._m
        where, args = f"originator_id = {m}", [self._key(uuid)]
        if version is not None:
            where, args = f"{where} AND originator_version = {m}", [*args, version]
        with self._cursor() as cur:
            cur.execute(f"DELETE FROM {self._table(False)} WHERE {where}", args)
            assert cur.rowcount >= 1

    def renumber(self, uuid: UUID, old: int, new: int) -> None:
        m = self._m
        with self._cursor() as cur:
            cur.execute(
                f"UPDATE {self._table(False)} SET originator_version = {m} "
                f"WHERE originator_id = {m} AND originator_version = {m}",
                (new, self._key(uuid), old),
            )
            assert cur.rowcount == 1

    def insert_copy(self, uuid: UUID, version: int, new_version: int) -> None:
        m, table = self._m, self._table(False)
        with self._cursor() as cur:
            cur.execute(
                f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
                f"SELECT originator_id, {m}, topic, state FROM {table} "
                f"WHERE originator_id = {m} AND originator_version = {m}",
                (new_version, self._key(uuid), version),
            )
