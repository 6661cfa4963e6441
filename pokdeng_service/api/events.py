"""The Events service: a resumable server stream of every event of a partition's log (capped with the
other event streams: ``Limits.streams("events")``, and ``EventHub.max_subscribers``). A position past
the log's head is OUT_OF_RANGE; a feed that had nothing but heartbeats to send for
``Limits.stream_idle`` seconds ends (CANCELLED, ``STREAM_IDLE``: subscribe again after its last position)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.limits import MAX_EVENT_BATCH, MAX_POSITION
from pokdeng_service.api import convert
from pokdeng_service.api.admission import NUDGE
from pokdeng_service.api.errors import OutOfRange, Unavailable
from pokdeng_service.api.requests import Fields
from pokdeng_service.api.rpcs import AUDITORS, Call, Env, Rpc, stream
from pokdeng_service.application.views import Notification

HANDOVER = NUDGE + 1.0
"""Seconds a subscription waits for the hub's place of one whose place it was given (that one leaves
within its poll, or is cancelled after ``NUDGE``)."""


def subscribe_events(env: Env, call: Call, request: pb.SubscribeEventsRequest) -> Iterator[pb.SubscribeEventsResponse]:
    f = Fields()
    if not 0 <= request.after_position < MAX_POSITION:
        f.bad("after_position", f"after_position is 0 to {MAX_POSITION - 1}")
    batch = f.between("batch_size", request.batch_size, 1, MAX_EVENT_BATCH, default=100)
    f.between("partition", request.partition, 0, len(env.service.apps) - 1)
    f.done()
    head = env.service.apps[request.partition].max_position
    if request.after_position > head:
        raise OutOfRange(
            f"after_position {request.after_position} is past the head of partition {request.partition}'s log, "
            f"{head}: resume after a position this log has delivered",
            position=str(request.after_position),
            head=str(head),
        )
    env.hub.enter(wait=HANDOVER)
    try:
        yield from _follow(env, call, request.after_position, batch, request.stop_at_head, request.partition)
    finally:
        env.hub.leave()


def _read(env: Env, after: int, batch: int, partition: int) -> Sequence[Notification]:
    return env.service.apps[partition].read_notifications(after, batch)


def _follow(
    env: Env, call: Call, after: int, batch: int, stop_at_head: bool, partition: int
) -> Iterator[pb.SubscribeEventsResponse]:
    hub = env.hub
    told_caught_up = False
    last_sent = time.monotonic()
    while call.active():
        if hub.closing.is_set():
            raise Unavailable(f"the server is shutting down: resume after position {after}", position=str(after))
        generation = hub.generation
        items = _read(env, after, batch, partition)
        if items:
            after = items[-1].position
            caught_up = len(items) < batch
            yield pb.SubscribeEventsResponse(
                events=[convert.notification(n) for n in items],
                last_position=after,
                caught_up=caught_up,
                partition=partition,
            )
            told_caught_up, last_sent = caught_up, time.monotonic()
            if not caught_up:
                continue
        elif not told_caught_up or time.monotonic() - last_sent >= env.heartbeat:
            yield pb.SubscribeEventsResponse(last_position=after, caught_up=True, partition=partition)  # or a heartbeat
            told_caught_up, last_sent = True, time.monotonic()
        if stop_at_head:
            return
        hub.wait(generation, env.poll)


def _heartbeat(reply: pb.SubscribeEventsResponse) -> bool:
    return not reply.events


RPCS: tuple[Rpc, ...] = (
    stream("EventService", "SubscribeEvents", AUDITORS, subscribe_events, kind="events", heartbeat=_heartbeat),
)
