"""The list queries' arguments and pages: checks, the round filter, cursors, and merging partitions.

Keyset paging, no offsets:

* **tables, wallets**: by id ascending (code point order, the same in memory, SQLite and
  PostgreSQL); the next page is asked with ``after`` = the last id of the page. Ids are unique
  across partitions (a table or wallet lives in its shard's partition), so the same ``after``
  pages a merge of every partition (:func:`merge_by_id`).
* **rounds**: newest first. In one log, by ``closed_position`` descending; the next page is
  asked with ``before_position`` = the last round's ``closed_position``. Positions of different
  partitions' logs are not comparable, so a page read from several carries a *cursor*: one
  position per partition (``RoundsPage.next_cursor``), entry ``k`` bounding partition ``k`` to
  ``closed_position < entry`` (0: no bound yet). :func:`merge_rounds` merges the partitions'
  newest-first runs by closing time (``(closed_at, round_id)``, newest first), taking each
  round from the head of its partition's run, so a page takes a prefix of each run and the
  cursor (each partition's last position taken) resumes exactly there: paging with the same
  filters yields every matching round once, in one order, whatever the page size.

Times (``closed_from`` inclusive, ``closed_to`` exclusive) are RFC 3339 texts with an offset
(``Z`` or ``+00:00``, any precision up to microseconds); :func:`instant` turns them into the
form ``closed_at`` is stored in (``datetime.isoformat()`` in UTC), whose text order is time order
(a whole second has no fraction, and ``+`` sorts before ``.``), so every backend compares text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from heapq import merge
from itertools import islice
from typing import TypedDict, TypeVar, Unpack

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.readmodels.models import RoundsPage, RoundSummary

OUTCOMES = ("settled", "voided")
LIST_MOST = 10_000  # the most rows ``list_tables``/``list_wallets`` give at once (a caller may ask one over its page)
T = TypeVar("T")
_FRACTION = re.compile(r":\d\d[.,](\d+)")


def check_limit(limit: int, most: int = 1000) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidCommand(f"limit is 1 to {most}", field="limit")


def check_text(value: str | None, field: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidCommand(f"{field} must be a text", field=field)
    return value


def check_position(value: int | None, field: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidCommand(f"{field} must be a log position (0 or more)", field=field)
    return value


def instant(value: str | None, field: str) -> str | None:
    """An RFC 3339 time as ``closed_at`` is stored (UTC, ``datetime.isoformat``); None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidCommand(f"{field} must be an RFC 3339 time", field=field)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidCommand(f"{field} is not an RFC 3339 time: {value!r}", field=field) from None
    if moment.tzinfo is None:
        raise InvalidCommand(f"{field} needs a date, a time and an offset (e.g. Z): {value!r}", field=field)
    fraction = _FRACTION.search(value)
    if fraction is not None and fraction.group(1)[6:].strip("0"):
        # finer than the stored microseconds (which fromisoformat drops): the next microsecond is the
        # same bound, for ``closed_at >= from`` and for ``closed_at < to`` alike
        moment += timedelta(microseconds=1)
    return moment.astimezone(UTC).isoformat()


@dataclass(frozen=True)
class RoundFilter:
    """Which closed rounds a list asks for, checked and with its times as stored (``of``): of the table
    and/or of the player (a wallet with money in the round, or its banker), ``closed_from <= closed_at <
    closed_to``, of the outcome ("settled" or "voided"). None: any."""

    table_id: str | None = None
    player: str | None = None
    closed_from: str | None = None
    closed_to: str | None = None
    outcome: str | None = None

    @classmethod
    def of(cls, **args: Unpack[RoundFilterArgs]) -> RoundFilter:
        """The filter of the keyword arguments a list method takes, checked: a time is RFC 3339 with an
        offset (made the text ``closed_at`` is stored as: :func:`instant`), an outcome one of ``OUTCOMES``."""
        outcome = args.get("outcome")
        if outcome is not None and outcome not in OUTCOMES:
            raise InvalidCommand(f"outcome is one of {', '.join(OUTCOMES)}", field="outcome")
        return cls(
            check_text(args.get("table_id"), "table_id"),
            check_text(args.get("player"), "player"),
            instant(args.get("closed_from"), "closed_from"),
            instant(args.get("closed_to"), "closed_to"),
            outcome,
        )


class RoundFilterArgs(TypedDict, total=False):
    """``RoundFilter``'s fields as the keyword arguments of the list methods (``list_rounds(player="p1")``,
    ``page_rounds(**filters)``), made a filter by ``RoundFilter.of``."""

    table_id: str | None
    player: str | None
    closed_from: str | None
    closed_to: str | None
    outcome: str | None


def check_cursor(cursor: Sequence[int] | None, partitions: int) -> tuple[int, ...]:
    """A round cursor as given back (None: the first page): one position (0 or more) per partition."""
    if cursor is None:
        return (0,) * partitions
    entries = tuple(cursor) if isinstance(cursor, Sequence) and not isinstance(cursor, str | bytes) else ()
    if len(entries) != partitions or any(isinstance(e, bool) or not isinstance(e, int) or e < 0 for e in entries):
        raise InvalidCommand(f"the cursor is not one of these rounds' ({partitions} position(s))", field="cursor")
    return entries


def merge_rounds(runs: Sequence[Sequence[RoundSummary]], cursor: tuple[int, ...], limit: int) -> RoundsPage:
    """A page of ``limit`` rounds from each partition's run (newest first, read with ``cursor`` and a
    limit of ``limit + 1``; an empty run for a partition not asked), merged newest first by closing time."""
    heads = [0] * len(runs)
    bounds = list(cursor)
    page: list[RoundSummary] = []
    while len(page) < limit:
        best = -1
        for k, run in enumerate(runs):
            if heads[k] < len(run) and (best < 0 or _later(run[heads[k]], runs[best][heads[best]])):
                best = k
        if best < 0:
            break
        summary = runs[best][heads[best]]
        heads[best] += 1
        bounds[best] = summary.closed_position
        page.append(summary)
    more = any(heads[k] < len(run) for k, run in enumerate(runs))
    return RoundsPage(rounds=tuple(page), next_cursor=tuple(bounds) if more else None)


def _later(one: RoundSummary, other: RoundSummary) -> bool:
    return (one.closed_at, one.round_id) > (other.closed_at, other.round_id)


def merge_by_id(runs: Sequence[Sequence[T]], key: Callable[[T], str], limit: int) -> tuple[T, ...]:
    """The first ``limit`` of the partitions' runs (each ascending by ``key``, at most ``limit`` long)."""
    merged: Iterator[T] = merge(*runs, key=key)
    return tuple(islice(merged, limit))


__all__ = [
    "LIST_MOST",
    "OUTCOMES",
    "RoundFilter",
    "RoundFilterArgs",
    "check_cursor",
    "check_limit",
    "check_position",
    "check_text",
    "instant",
    "merge_by_id",
    "merge_rounds",
]
