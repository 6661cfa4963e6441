"""WatchTable and WatchRound: one stream's events, from a resume token, then as they are recorded.

Any role may watch any table or round. A table's facts are public (another bidder's capital is
blanked for a player). A round's events are filtered by what the caller may see now: a player sees
its own hole cards and what was shown to the table, never another hand's cards before they are
shown (``convert.visibility_for``); an event sent blanked stays blanked on this stream (read the
round again once it is over: everything is shown then). Each stream is read through the verified
load path (the round's or table's chain), capped with the other watch streams
(``Limits.streams("watch")``), ends with UNAVAILABLE when the server shuts down (resume with the
last token), and sends a heartbeat (a message with no event, the same token) when nothing happened
for ``Env.heartbeat`` seconds. A round's stream ends after its ``round_closed``. A stream that had
nothing but heartbeats to send for ``Limits.stream_idle`` seconds ends (CANCELLED, ``STREAM_IDLE``:
call again with the last token), and so does one whose place went to another caller's
(RESOURCE_EXHAUSTED, ``STREAM_PREEMPTED``): the wrapper tells it (``Call.active``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import events as re
from pokdeng_core.limits import MAX_POSITION
from pokdeng_service.api import convert, paging
from pokdeng_service.api.errors import Unavailable
from pokdeng_service.api.replies import viewer
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import READERS, Call, Env, Rpc, stream
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.store import aggregates as ag

WATCH_PAGE = 64  # events a watch reads and sends at a time (then, if more are stored, the next page)
Batch = Callable[[int], tuple[Sequence[pb.RecordedEvent], bool]]
"""Events after a position (as the caller may see them), and whether the stream is over."""


def _start(env: Env, method: str, key: str, ident: str, token: str) -> int:
    f = Fields()
    f.ident(key, ident)
    f.done()
    cursor = paging.decode(method, {key: ident}, token, env.token_key, "resume_token")
    # position 1 is the stream's creation (never sent): from the start, the first event sent is 2
    position = paging.int_cursor(cursor, "resume_token") if cursor is not None else 1
    if position >= MAX_POSITION:
        paging.int_cursor(-1, "resume_token")
    return position


def _follow(
    env: Env, call: Call, method: str, key: str, ident: str, position: int, batch: Batch, reply: Any
) -> Iterator[Any]:
    hub = env.hub
    last_sent = time.monotonic()
    history = True  # the first page, and every page after a full one, read what is stored: a costly read
    while call.active():
        if hub.closing.is_set():
            raise Unavailable(f"the server is shutting down: resume {method} with the last token")
        generation = hub.generation
        # (a worker's turn, as a unary call; a page after a full one, history, a costly slot's too)
        events, over = env.fairly(call, functools.partial(batch, position), costly=history)
        history = len(events) >= WATCH_PAGE
        for event in events:
            position = event.sequence
            yield reply(event=event, resume_token=paging.encode(method, {key: ident}, position, env.token_key))
            last_sent = time.monotonic()
        if over:
            return
        if len(events) >= WATCH_PAGE:
            continue  # more is stored: the next page at once
        if not events and time.monotonic() - last_sent >= env.heartbeat:
            yield reply(resume_token=paging.encode(method, {key: ident}, position, env.token_key))
            last_sent = time.monotonic()
        hub.wait(generation, env.poll)


def watch_round(env: Env, call: Call, request: pb.WatchRoundRequest) -> Iterator[pb.WatchRoundResponse]:
    round_id = request.round_id
    position = _start(env, "WatchRound", "round_id", round_id, request.resume_token)
    app = env.service.app_for(round_id, "round")
    app.get_round(round_id, with_events=False)  # NOT_FOUND (or a forged stream refused) before the stream opens
    who = viewer(call)

    def batch(after: int) -> tuple[list[pb.RecordedEvent], bool]:
        view = app.get_round(round_id)
        seen = convert.visibility_for(who, view)
        fresh = [e for e in view.events if e.position > after]
        over = bool(view.events) and view.events[-1].kind == re.RoundClosed.kind
        return convert.recorded_events(fresh, "round", seen), over

    yield from _follow(env, call, "WatchRound", "round_id", round_id, position, batch, pb.WatchRoundResponse)


def watch_table(env: Env, call: Call, request: pb.WatchTableRequest) -> Iterator[pb.WatchTableResponse]:
    table_id = request.table_id
    position = _start(env, "WatchTable", "table_id", table_id, request.resume_token)
    app = env.service.app_for(table_id)
    app.get_table(table_id)  # NOT_FOUND before the stream opens
    who = viewer(call)
    uuid = ag.table_uuid(table_id)

    def batch(after: int) -> tuple[list[pb.RecordedEvent], bool]:
        record = app.load_table(table_id)  # the verified path: the table's chain up to its version
        fresh: Sequence[RecordedEvent] = ()
        if record.version > after:  # a page at a time: a long table's history is not read in one go
            fresh = app.stream_events(uuid, gt=after, lte=min(record.version, after + WATCH_PAGE))
        return convert.table_events(fresh, who), False

    yield from _follow(env, call, "WatchTable", "table_id", table_id, position, batch, pb.WatchTableResponse)


def _heartbeat(reply: Any) -> bool:
    return not reply.HasField("event")


RPCS: tuple[Rpc, ...] = (
    stream("TableService", "WatchTable", READERS, watch_table, kind="watch", heartbeat=_heartbeat),
    stream("RoundService", "WatchRound", READERS, watch_round, kind="watch", heartbeat=_heartbeat),
)
