"""Where a verification finds a table's pin of a round: its ``round_finished`` event.

A table's ``round_finished`` holds the round stream's last chain digest, so that deleting
the tail of a round, or rewriting its chain, shows (docs/audit.md). ``table_finish`` finds
it for one round with fresh reads; ``TablePins`` serves a batch of verifications, reading
each table's stream ahead. Both read the stored rows and decode only ``RoundFinished``
rows (by topic). ``app`` is an application as ``live.AuditedRecord`` describes it (here its
``recorder``, ``mapper``, ``audit_hints`` and ``stream_events``). Both check first that the
table's stream opens the table it is read for, reading its first row in the same read as the
first page of its pins (``fastpaths.select_rows``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from eventsourcing.utils import get_topic

from pokdeng_core.table_events import RoundFinished
from pokdeng_service.application.errors import stream_forged
from pokdeng_service.store.aggregates import TableRecord, table_uuid
from pokdeng_service.store.facts import Fact, Recorded
from pokdeng_service.store.fastpaths import fact_of_row, select_rows

ROUND_FINISHED_TOPIC = get_topic(TableRecord.RoundFinished)  # type: ignore[attr-defined]
_TABLE_OPENED = TableRecord.Opened.__name__  # the kind of a table stream's first event


def table_finish(app: Any, table_id: str, round_id: str, round_no: int) -> Recorded | None:
    """The table's ``round_finished`` event of the round (the first, should there be several).

    A table's rounds run one after another, and each leaves a ``round_started`` and a
    ``round_finished`` in the table's stream after the table's creation and opening: round
    ``n`` finishes at position ``2n + 2`` or later. The search starts there (or first where
    the app's ``audit_hints`` say this table's pins lie, one page only) and reads the stored
    rows forward, a page at a time, decoding only ``RoundFinished`` rows, so that verifying a
    round neither reads the table's whole history nor decodes its other events. If nothing is
    found from there, the whole stream is searched from its start.
    """
    uuid = table_uuid(table_id)
    if getattr(app, "recorder", None) is not None and isinstance(round_no, int) and round_no > 0:
        base = 2 * round_no + 1  # round n's round_finished is after this position
        hints: dict[str, int] | None = getattr(app, "audit_hints", None)
        hint = hints.get(table_id) if hints is not None else None
        starts = ((base + hint, 2, True), (base, 4, False)) if hint else ((base, 4, False),)
        rows: list[Any] | None = _opened_and_page(app, table_id, starts[0][0], starts[0][1])
        for start, page, once in starts:
            found = _first_pin(app, uuid, round_id, start, page, grow=True, pages=1 if once else None, rows=rows)
            rows = None
            if found is not None:
                if hints is not None:
                    hints[table_id] = found.position - base - 1
                return found
    events = app.stream_events(uuid)
    if events:
        _check_opened(table_id, events[0])
    finished = [e for e in events if e.kind == RoundFinished.kind and e.data.get("round_id") == round_id]
    return finished[0] if finished else None


def _opened_and_page(app: Any, table_id: str, after: int, page: int) -> list[Any]:
    """The table's first ``page`` rows after ``after`` (ascending), once its first stored row is found to
    open table ``table_id`` (else ``StreamForged``, its alert logged): both read in one read transaction."""
    uuid = table_uuid(table_id)
    first, rows = select_rows(app.recorder, [(uuid, None, 1, None), (uuid, after, None, page)])
    if first:
        _check_opened(table_id, fact_of_row(app.mapper, first[0]))
    return rows


def _check_opened(table_id: str, first: Recorded) -> None:
    claimed = first.data.get("table_id") if first.kind == _TABLE_OPENED else None
    if first.position != 1 or claimed != table_id:
        problem = f"its first event is {first.kind} at {first.position}, naming table {claimed!r}"
        raise stream_forged("table", table_id, table_uuid(table_id), problem)


def _pin_pages(
    app: Any, uuid: Any, after: int, page: int, grow: bool, rows: list[Any] | None = None
) -> Iterator[tuple[list[Fact], int]]:
    """The table's rows after ``after``, a page at a time (each page four times the last if
    ``grow``, up to 1,000 rows): each page's ``round_finished`` pins, in order, and the last
    position it read. Only ``RoundFinished`` rows are decoded; the pages end with the stream.
    ``rows``: the first page, if it was read already (``_opened_and_page``)."""
    while True:
        if rows is None:
            (rows,) = select_rows(app.recorder, [(uuid, after, None, page)])
        pins = [fact_of_row(app.mapper, row) for row in rows if row.topic == ROUND_FINISHED_TOPIC]
        if rows:
            after = rows[-1].originator_version
        yield [pin for pin in pins if pin.kind == RoundFinished.kind], after
        if len(rows) < page:
            return
        rows = None
        if grow:
            page = min(page * 4, 1000)


def _first_pin(
    app: Any,
    uuid: Any,
    round_id: str,
    after: int,
    page: int,
    grow: bool,
    pages: int | None,
    rows: list[Any] | None = None,
) -> Fact | None:
    """The round's first pin after ``after``, reading at most ``pages`` pages (None: to the end;
    ``rows``: the first page, read already)."""
    for number, (pins, _last) in enumerate(_pin_pages(app, uuid, after, page, grow, rows), start=1):
        found = next((pin for pin in pins if pin.data.get("round_id") == round_id), None)
        if found is not None or number == pages:
            return found
    return None


class TablePins:
    """The tables' ``round_finished`` pins for one batch of verifications, read ahead.

    Finding a round's pin reads the table's stream forward from where the batch last read
    it (or from where the round's pin is likely to be), ``PAGE`` rows at a time, decoding
    only ``RoundFinished`` rows; the pins of other rounds passed on the way are kept for
    when their rounds come up (at most ``KEEP``). A pin not found within ``PAGES`` pages is
    searched for as ``verify_round`` does on its own (``table_finish``). Pins read ahead are
    as the store held them when read: one batch is one reading of the record.
    """

    PAGE = 64
    PAGES = 4
    KEEP = 10_000

    def __init__(self, app: Any) -> None:
        self.app = app
        self.ahead: dict[str, Recorded] = {}
        self.read_to: dict[str, int] = {}

    def find(self, table_id: str, round_id: str, round_no: int) -> Recorded | None:
        pin = self.ahead.pop(round_id, None)
        if pin is not None:
            return pin
        if getattr(self.app, "recorder", None) is not None and isinstance(round_no, int) and round_no > 0:
            found = self._read_ahead(table_id, round_id, round_no)
            if found is not None:
                return found
        return table_finish(self.app, table_id, round_id, round_no)

    def _read_ahead(self, table_id: str, round_id: str, round_no: int) -> Recorded | None:
        after = self.read_to.get(table_id)
        rows: list[Any] | None = None
        if after is None:
            hints: dict[str, int] = getattr(self.app, "audit_hints", None) or {}
            after = 2 * round_no + 1 + max(hints.get(table_id, 0), 0)
            rows = _opened_and_page(self.app, table_id, after, self.PAGE)  # (the check: once a batch per table)
        found: Recorded | None = None
        pages = _pin_pages(self.app, table_uuid(table_id), after, self.PAGE, grow=False, rows=rows)
        for number, (pins, last) in enumerate(pages, start=1):
            self.read_to[table_id] = last
            for pin in pins:
                owner = pin.data.get("round_id", "")
                if owner == round_id:
                    found = found or pin  # the first, should there be several
                elif len(self.ahead) < self.KEEP:
                    self.ahead.setdefault(owner, pin)
            if found is not None or number == self.PAGES:
                break
        return found
