"""The projection runner: ``ReadModels``, the read models' front, and its background thread.

Positions and tracking
----------------------
A *position* is an event's notification id in the application's notification log (SQLite: the
events table's rowid; PostgreSQL: ``notification_id``; in memory: the 1-based index), the order in
which events were committed. Positions grow but may have gaps (PostgreSQL sequences skip the ids of
rolled-back inserts). Position 0 means "nothing processed".

The tracking record lives in the table ``pokdeng_readmodels_tracking`` (the *tracking name*
``pokdeng_readmodels``; it is also the eventsourcing environment name, so
``POKDENG_READMODELS_<KEY>`` settings override ``<KEY>`` for the read models only). Its row
``application_name = app.name`` (``"pokdeng"``) holds the position of the last notification whose
effects are in the views. The table sits in the application's store: the same SQLite file, the
same PostgreSQL database and schema. In memory (POPO) it is a dict beside the views.

Exactly once
------------
Notifications are read in pages of 1,000 with ``app.recorder.select_notifications`` (the notification
log's ``select`` caps a page at ``log_section_size``). A page is projected in ONE database
transaction that (1) locks the tracking row and checks that it still holds the position the page
was read after, (2) writes the page's view changes, (3) records the page's last position with the
library's ``_insert_tracking`` (which also refuses to move backwards). Either the views and the
position change together or neither does: a crash at any point replays from the last committed
position, and a page that another process already projected is refused at (1) and re-read, so no
event is applied twice. The per-event path (:class:`ReadModelProjection`, for eventsourcing's
``ProjectionRunner``) uses the same transaction with the library's rule "the position must grow".
Both hand the recorder this module's ``project_event`` (the fold of one event, from ``fold``).

Secret seeds (``SealedSeed``) and request records are never decoded: their notifications only move
the position forward. ``catch_up`` counts every notification it moved past, these included.

Two other numbers are not log positions: a statement line's ``position`` (and ``statement``'s
``after``) is the wallet stream's version, as in ``PokdengApp.wallet_statement``; an open round's
``version`` is the round stream's version. ``ProjectionRunner`` subscribes to
:data:`PROJECTED_TOPICS` only, so under it the tracked position is that of the last event that
changed a view; the next :meth:`ReadModels.catch_up` moves it past the rest.

Use
---
``rm = ReadModels.for_app(app)`` (or ``ReadModels(env)``); ``rm.catch_up(app)`` after a start or
restart; ``rm.run_in_background(app)`` to follow the log (PostgreSQL and POPO wake on new events,
SQLite polls); ``rm.rebuild(app)`` after a change of view code (a new ``recorder.VIEWS_VERSION``
does it by itself: the first read-write start drops the old views and the catch-up replays).
Queries: :meth:`ReadModels.last_rounds` (per table and/or per player; the last N in play order),
``statement``, ``wallet_balance``, ``open_rounds``, ``house_totals``; the list queries with keyset
paging (``paging`` says how a next page is asked): :meth:`ReadModels.list_tables`,
:meth:`ReadModels.list_wallets`, :meth:`ReadModels.list_rounds` and :meth:`ReadModels.page_rounds`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from eventsourcing.application import Application
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import InfrastructureFactory, InterfaceError, Notification, OperationalError, Tracking
from eventsourcing.postgres import PostgresFactory
from eventsourcing.projection import Projection
from eventsourcing.sqlite import SQLiteFactory
from eventsourcing.utils import Environment, TopicError, resolve_topic

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.fold import PROJECTED_TOPICS, Item, is_projected
from pokdeng_service.readmodels.fold import project_event as project_event  # the fold handed to the recorder, swappable
from pokdeng_service.readmodels.memory import POPOReadModelRecorder
from pokdeng_service.readmodels.models import (
    HouseTotals,
    OpenRound,
    RoundsPage,
    RoundSummary,
    TableSummary,
    WalletBalance,
)
from pokdeng_service.readmodels.paging import (
    LIST_MOST,
    RoundFilter,
    RoundFilterArgs,
    check_cursor,
    check_position,
    check_text,
    merge_rounds,
)
from pokdeng_service.readmodels.paging import check_limit as _check_limit
from pokdeng_service.readmodels.postgres import PostgresReadModelRecorder
from pokdeng_service.readmodels.recorder import TRACKING_NAME, PositionMoved, ReadModelRecorder
from pokdeng_service.readmodels.sqlite import SQLiteReadModelRecorder
from pokdeng_service.store.aggregates import wallet_uuid

PAGE_SIZE = 1000
PUSHED_PAGE_GAP = 0.05  # seconds: a store that pushes (PostgreSQL, POPO) is caught up at most this often


# --- eventsourcing's projection interface ------------------------------------------------------


class ReadModelProjection(Projection[ReadModelRecorder]):
    """The library's per-event projection, for ``eventsourcing.projection.ProjectionRunner``.

    ``ProjectionRunner(application_class=PokdengApp, projection_class=ReadModelProjection,
    view_class=recorder_class(env), env=env)`` keeps the same views live on a backend that
    supports subscriptions (PostgreSQL, POPO); SQLite has none: use :meth:`ReadModels.catch_up`.
    """

    name = TRACKING_NAME
    topics = PROJECTED_TOPICS

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        self.view.apply(tracking.application_name, None, [(tracking.notification_id, domain_event)], project_event)


def recorder_class(env: Mapping[str, str] | None = None, app_name: str = "pokdeng") -> type[ReadModelRecorder]:
    """The view class for the persistence module that ``env`` selects."""
    module = _environment(env, app_name).get(InfrastructureFactory.PERSISTENCE_MODULE, "") or "eventsourcing.popo"
    if module.startswith("eventsourcing.sqlite"):
        return SQLiteReadModelRecorder
    if module.startswith("eventsourcing.postgres"):
        return PostgresReadModelRecorder
    if module.startswith("eventsourcing.popo"):
        return POPOReadModelRecorder
    # a factory class named by its topic (``module:Class``, e.g. the read-only ones of ``store.readonly``)
    try:
        factory = resolve_topic(module) if ":" in module else None
    except TopicError:
        factory = None
    if isinstance(factory, type) and issubclass(factory, SQLiteFactory):
        return SQLiteReadModelRecorder
    if isinstance(factory, type) and issubclass(factory, PostgresFactory):
        return PostgresReadModelRecorder
    raise OperationalError(f"no read-model recorder for persistence module {module!r}")


def _environment(env: Mapping[str, str] | None, app_name: str = "pokdeng") -> Environment:
    """The settings as the application reads them (``os.environ``, then ``env``; ``POKDENG_<KEY>``
    over ``<KEY>``), so that the views land in the application's store; ``POKDENG_READMODELS_<KEY>``
    overrides both for the read models alone."""
    merged = dict(os.environ)
    merged.update(env or {})
    prefix = app_name.upper() + "_"
    own = TRACKING_NAME.upper() + "_"
    for key, value in list(merged.items()):
        if key.startswith(prefix) and not key.startswith(own) and len(key) > len(prefix):
            merged[key[len(prefix) :]] = value
    return Environment(TRACKING_NAME, merged)


# --- the public face ------------------------------------------------------------------------


class ReadModels:
    """The read models of one application store.

    ``ReadModels(env)`` takes the application's eventsourcing settings (the same store: the same
    SQLite file or PostgreSQL database and schema); ``ReadModels.for_app(app)`` takes them from a
    running application. Without ``PERSISTENCE_MODULE`` the views are in memory (POPO). An
    in-memory SQLite database (``:memory:``) cannot be shared: use a file. Nothing is read until
    :meth:`catch_up` (or :meth:`run_in_background`) is given the application.
    """

    def __init__(self, env: Mapping[str, str] | None = None, app_name: str = "pokdeng") -> None:
        environment = _environment(env, app_name)
        self.factory = InfrastructureFactory.construct(environment)
        recorder = self.factory.tracking_recorder(recorder_class(env, app_name))
        assert isinstance(recorder, ReadModelRecorder)
        self.recorder: ReadModelRecorder = recorder
        self.projection = ReadModelProjection(view=self.recorder)
        self.page_size = PAGE_SIZE
        self._lock = threading.Lock()  # one catch-up at a time in this process
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._subscription: Any = None
        self._background_app: Application[Any] | None = None
        self._interval = 0.1
        self.error: BaseException | None = None  # the last error the background thread met
        self._current = False  # the views are of this code's version (checked once, then kept)

    @classmethod
    def for_app(cls, app: Application[Any]) -> ReadModels:
        """Read models in the store of ``app`` (from the settings it was made with)."""
        return cls(dict(app.env), app.name)

    # -- processing ------------------------------------------------------------------------

    def position(self, app_name: str = "pokdeng") -> int:
        """The log position of the last notification in the views (0: none, or views of another
        ``VIEWS_VERSION`` in a store opened read only, which must be rebuilt before they are used)."""
        position = self.recorder.position(app_name)
        if position and not self._current:
            self._current = self.recorder.views_current()
            if not self._current:
                return 0
        return position

    def catch_up(self, app: Application[Any], upto: int | None = None) -> int:
        """Project every notification after the tracked position (up to position ``upto``, if given); return
        how many were processed.

        Pages of ``page_size`` notifications, each in one transaction with its last position.
        Returns once a page comes back short (the log's end when it was read, or ``upto``).
        """
        done = 0
        with self._lock:
            while True:
                after = self.recorder.position(app.name)
                if upto is not None and after >= upto:
                    return done
                page = app.recorder.select_notifications(start=after + 1, limit=self.page_size, stop=upto)
                if not page:
                    return done
                items = [(n.id, self._decode(app, n)) for n in page]
                try:
                    self._apply(app.name, after, items)
                except PositionMoved:
                    continue  # another process projected part of it: read again from its position
                done += len(page)
                if len(page) < self.page_size:
                    return done

    def _apply(self, app_name: str, after: int, items: Sequence[Item]) -> None:
        for attempt in range(5):
            try:
                self.recorder.apply(app_name, after, items, project_event)
                return
            except (OperationalError, InterfaceError):
                if attempt == 4:
                    raise
                self._stopping.wait(0.05 * 2**attempt)

    @staticmethod
    def _decode(app: Application[Any], notification: Notification) -> DomainEventProtocol[Any] | None:
        if not is_projected(notification.topic):
            return None  # seeds, request records, table facts the views don't use: never decoded
        return app.mapper.to_domain_event(notification)

    def run_in_background(self, app: Application[Any], interval: float = 0.1) -> None:
        """Keep the views up to date in a thread until :meth:`stop`.

        With a store that pushes (PostgreSQL LISTEN/NOTIFY, POPO) the thread wakes on a new notification
        through ``app.recorder.subscribe``, and catches up at once after a quiet spell but at most once each
        ``PUSHED_PAGE_GAP`` s under load; with SQLite it polls every ``interval`` s.
        Either way the work is :meth:`catch_up`, so batches and exactly-once are the same.
        """
        if self._thread is not None:
            raise RuntimeError("the read models are already running in the background")
        self._stopping.clear()
        self._background_app = app
        self._interval = interval
        self.error = None
        self._thread = threading.Thread(target=self._run, args=(app, interval), name="pokdeng-readmodels", daemon=True)
        self._thread.start()

    def _run(self, app: Application[Any], interval: float) -> None:
        while not self._stopping.is_set():
            try:
                self.catch_up(app)
                try:
                    subscription = app.recorder.subscribe(gt=self.position(app.name))
                except RuntimeError:  # SQLite's recorder has no subscriptions (the library says "not implemented")
                    subscription = None
                if subscription is None:
                    while not self._stopping.wait(interval):
                        self.catch_up(app)
                    return
                self._subscription = subscription
                with subscription:
                    if self._stopping.is_set():
                        return
                    # eventsourcing 9.5.6's POPO subscription starts reading before it listens:
                    # an event recorded in between would wake nobody. Catching up once more, now
                    # that it listens, takes in whatever was recorded before that.
                    self.catch_up(app)
                    seen, last = self.position(app.name), time.monotonic()
                    for notification in subscription:
                        if self._stopping.is_set():
                            return
                        if notification.id > seen:  # else already in the views (a page ran past it)
                            # at most one catch-up each PUSHED_PAGE_GAP s: under load a page takes in
                            # many commands' events, instead of a transaction of its own for each
                            pause = last + min(interval, PUSHED_PAGE_GAP) - time.monotonic()
                            if pause > 0 and self._stopping.wait(pause):
                                return
                            self.catch_up(app)
                            seen, last = self.position(app.name), time.monotonic()
                return
            except Exception as error:  # keep going after a passing fault (the position is safe)
                self.error = error
                self._stopping.wait(max(interval, 0.5))
            finally:
                self._subscription = None

    def stop(self) -> None:
        """Stop the background thread (if any) and wait for it."""
        self._stopping.set()
        subscription = self._subscription
        if subscription is not None:
            subscription.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait(self, position: int, timeout: float = 5.0, app_name: str = "pokdeng") -> None:
        """Block until the views include ``position`` (TimeoutError after ``timeout`` s)."""
        self.recorder.wait(app_name, position, timeout=timeout)

    def rebuild(self, app: Application[Any] | None = None) -> int:
        """Drop every view and tracking position, then replay the log from zero.

        With no ``app`` the background thread's application is used (if one runs); with
        neither, the views are emptied and the next :meth:`catch_up` replays. Returns how
        many notifications were replayed.
        """
        background = self._background_app if self._thread is not None else None
        interval = self._interval
        if background is not None:
            self.stop()
        try:
            with self._lock:
                self.recorder.reset()
            target = app or background
            return self.catch_up(target) if target is not None else 0
        finally:
            if background is not None:
                self.run_in_background(background, interval)

    def close(self) -> None:
        self.stop()
        self.factory.close()

    def __enter__(self) -> ReadModels:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- queries ---------------------------------------------------------------------------

    def last_rounds(
        self, table_id: str | None = None, player: str | None = None, limit: int = 10
    ) -> tuple[RoundSummary, ...]:
        """The last ``limit`` closed rounds (of a table, of a player, or both), oldest first.

        Play order is the order in which rounds closed (their ``round_closed`` positions); for
        one table that is also the order of round numbers.
        """
        _check_limit(limit)
        return self.recorder.last_rounds(table_id, player, limit)

    def statement(self, wallet_id: str, after: int = 0, limit: int = 100) -> tuple[StatementLine, ...]:
        """A wallet's movements after its stream version ``after``, with the running balance.

        Lines are the same as ``PokdengApp.wallet_statement`` (``position`` is the wallet's
        version). An unknown wallet (or one the views have not reached yet) has none.
        """
        _check_limit(limit)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidCommand("after must not be negative", field="after")
        return self.recorder.statement(wallet_uuid(wallet_id).hex, after, limit)

    def wallet_balance(self, wallet_id: str) -> WalletBalance | None:
        """A wallet's balance and reserved funds as the views have them (None: not seen)."""
        return self.recorder.wallet_balance(wallet_uuid(wallet_id).hex)

    def open_rounds(self, table_id: str | None = None) -> tuple[OpenRound, ...]:
        """Rounds started and not closed, in the order they started."""
        return self.recorder.open_rounds(table_id)

    def house_totals(self, table_id: str | None = None) -> HouseTotals:
        """The house's ledger over every table (or one): its net as banker, the commission, round counts."""
        return self.recorder.house_totals(table_id)

    def list_tables(
        self, after: str | None = None, limit: int = 100, profile: str | None = None
    ) -> tuple[TableSummary, ...]:
        """The tables directory by ``table_id`` ascending (code point order): ids greater than ``after``,
        at most ``limit`` (1 to 10,000), of the profile (its name) if given. Next page: ``after`` = the
        last ``table_id``; ask for one more than a page to know whether there is a next one."""
        _check_limit(limit, LIST_MOST)
        return self.recorder.list_tables(check_text(after, "after"), limit, check_text(profile, "profile"))

    def list_wallets(self, after: str | None = None, limit: int = 100) -> tuple[WalletBalance, ...]:
        """Every wallet's balance by ``wallet_id`` ascending (the id clients use, code point order): ids
        greater than ``after``, at most ``limit`` (1 to 10,000). Next page: ``after`` = the last
        ``wallet_id``; ask for one more than a page to know whether there is a next one."""
        _check_limit(limit, LIST_MOST)
        return self.recorder.list_wallets(check_text(after, "after"), limit)

    def list_rounds(
        self, *, before_position: int | None = None, limit: int = 10, **filters: Unpack[RoundFilterArgs]
    ) -> tuple[RoundSummary, ...]:
        """Closed rounds, newest first (``closed_position`` descending), at most ``limit``.

        Those the ``filters`` let through (``RoundFilter``: of the table and/or the player, closed at
        ``closed_from`` or later and before ``closed_to``, RFC 3339 with an offset, e.g.
        ``2026-05-01T00:00:00Z``; ``outcome`` "settled" or "voided"), with ``closed_position <
        before_position``. Next page: ``before_position`` = the last round's ``closed_position``
        (with the same filters); a page shorter than ``limit`` is the last.
        """
        _check_limit(limit)
        query = RoundFilter.of(**filters)
        return self.select_rounds(query, check_position(before_position, "before_position"), limit)

    def page_rounds(
        self, *, cursor: Sequence[int] | None = None, limit: int = 10, **filters: Unpack[RoundFilterArgs]
    ) -> RoundsPage:
        """:meth:`list_rounds` as a page with its cursor, as ``PartitionedReadModels.page_rounds`` gives it
        (here the cursor has one entry): pass ``next_cursor`` back as ``cursor``; None: no more rounds."""
        _check_limit(limit)
        query = RoundFilter.of(**filters)
        (before,) = check_cursor(cursor, 1)
        return merge_rounds([self.select_rounds(query, before or None, limit + 1)], (before,), limit)

    def select_rounds(self, query: RoundFilter, before_position: int | None, limit: int) -> tuple[RoundSummary, ...]:
        """``list_rounds`` with arguments already checked (``limit`` may be one more than a page's, as
        ``page_rounds`` and ``PartitionedReadModels.page_rounds`` ask, to know if there are more)."""
        return self.recorder.list_rounds(query, before_position, limit)


__all__ = [
    "PAGE_SIZE",
    "PROJECTED_TOPICS",
    "POPOReadModelRecorder",
    "PostgresReadModelRecorder",
    "ReadModelProjection",
    "ReadModels",
    "SQLiteReadModelRecorder",
    "recorder_class",
]
