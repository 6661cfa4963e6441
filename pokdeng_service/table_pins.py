"""Where a verification finds a table's pin of a round: its ``round_finished`` event.

A table's ``round_finished`` holds the round stream's last chain digest, so that deleting
the tail of a round, or rewriting its chain, shows (docs/audit.md). ``table_finish`` finds
it for one round with fresh reads; ``TablePins`` serves a batch of verifications, reading
each table's stream ahead. Both read the stored rows and decode only ``RoundFinished``
rows (by topic).
"""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from .facts import Fact, Recorded, fact_of_row


def table_finish(app: Any, table_id: str, round_id: str, round_no: int) -> Recorded | None:
    """The table's ``round_finished`` event of the round (the first, should there be several).

    A table's rounds run one after another, and each leaves a ``round_started`` and a
    ``round_finished`` in the table's stream after the table's creation and opening: round
    ``n`` finishes at position ``2n + 2`` or later. The search starts there and reads the
    stored rows forward, a page at a time, decoding only those whose topic is the table's
    ``RoundFinished``, so that verifying a round neither reads the table's whole history
    nor decodes its other events. If nothing is found from there, the whole stream is
    searched from its start.
    """
    uuid = _table_uuid(table_id)
    recorder = getattr(app, "recorder", None)
    if recorder is not None and isinstance(round_no, int) and round_no > 0:
        topic = _round_finished_topic()
        base = 2 * round_no + 1  # round n's round_finished is after this position
        hints: dict[str, int] | None = getattr(app, "audit_hints", None)
        hint = hints.get(table_id) if hints is not None else None
        starts = (base + hint, base) if hint else (base,)
        for start, first_page in zip(starts, (2, 4), strict=False):
            found = _walk_for_finish(app, recorder, uuid, topic, round_id, start, first_page, once=start != base)
            if found is not None:
                if hints is not None:
                    hints[table_id] = found.position - base - 1
                return found
    finished = [e for e in app._recorded(uuid) if e.kind == "round_finished" and e.data["round_id"] == round_id]
    return finished[0] if finished else None


_ROUND_FINISHED_TOPIC: dict[str, str] = {}


def _walk_for_finish(
    app: Any, recorder: Any, uuid: Any, topic: str, round_id: str, after: int, page: int, once: bool
) -> Fact | None:
    """Read the table's rows after ``after`` a page at a time (only the first page if ``once``),
    decoding only ``RoundFinished`` rows, until the round's is found or the stream ends."""
    while True:
        rows = recorder.select_events(uuid, gt=after, limit=page)
        for row in rows:
            if row.topic != topic:
                continue
            event = fact_of_row(app.mapper, row)
            if event.kind == "round_finished" and event.data["round_id"] == round_id:
                return event
        if once or len(rows) < page:
            return None
        after = rows[-1].originator_version
        page = min(page * 4, 1000)


class TablePins:
    """The tables' ``round_finished`` pins for one batch of verifications, read ahead.

    Finding a round's pin reads the table's stream forward from where the batch last read
    it (or from where the round's pin is likely to be), ``PAGE`` rows at a time, decoding
    only ``RoundFinished`` rows; the pins of other rounds passed on the way are kept for
    when their rounds come up (at most ``KEEP``). A pin not found within ``PAGES`` pages is
    searched for as ``verify_round`` does on its own (``_table_finish``). Pins read ahead are
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
        recorder = getattr(self.app, "recorder", None)
        if recorder is not None and isinstance(round_no, int) and round_no > 0:
            found = self._read_ahead(recorder, table_id, round_id, round_no)
            if found is not None:
                return found
        return table_finish(self.app, table_id, round_id, round_no)

    def _read_ahead(self, recorder: Any, table_id: str, round_id: str, round_no: int) -> Recorded | None:
        base = 2 * round_no + 1
        after = self.read_to.get(table_id)
        if after is None:
            hints: dict[str, int] = getattr(self.app, "audit_hints", None) or {}
            after = base + max(hints.get(table_id, 0), 0)
        uuid, topic, found = _table_uuid(table_id), _round_finished_topic(), None
        for _ in range(self.PAGES):
            rows = recorder.select_events(uuid, gt=after, limit=self.PAGE)
            for row in rows:
                if row.topic != topic:
                    continue
                pin = fact_of_row(self.app.mapper, row)
                if pin.kind != "round_finished":
                    continue
                if pin.data.get("round_id") == round_id:
                    found = found or pin  # the first, should there be several
                elif len(self.ahead) < self.KEEP:
                    self.ahead.setdefault(pin.data.get("round_id", ""), pin)
            if rows:
                after = rows[-1].originator_version
                self.read_to[table_id] = after
            if found is not None or len(rows) < self.PAGE:
                break
        return found


def _round_finished_topic() -> str:
    from .aggregates import TableRecord

    topic = _ROUND_FINISHED_TOPIC.get("topic")
    if topic is None:
        topic = _ROUND_FINISHED_TOPIC["topic"] = get_topic(TableRecord.RoundFinished)  # type: ignore[attr-defined]
    return topic


def _table_uuid(table_id: str) -> Any:
    from .aggregates import table_uuid

    return table_uuid(table_id)
