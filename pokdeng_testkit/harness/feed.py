"""A client of the event feed (``EventService.SubscribeEvents``) that resumes across server kills.

It follows the feed from position 0; when the stream ends (the server was killed, or stopped: the
server ends a stream with UNAVAILABLE) it subscribes again after the last position it received,
as the API tells clients to. What it received must be the store's log exactly, with nothing
skipped or repeated (``checks.audit_api(feed=...)``). Once ``stop`` is set it reads up to the head
(``stop_at_head``) and ends: ``finish()`` sets it and cancels the stream the follower waits on.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .client import HarnessClient, stream_name

FeedItem = tuple[int, str, str, int]  # position, stream kind, stream id, version


@dataclass
class FeedFollower:
    client: HarnessClient  # an auditor's (or the operator's) client
    stop: threading.Event
    max_seconds: float = 900.0
    items: list[FeedItem] = field(default_factory=list)
    subscriptions: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    done: bool = False

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._call: Any = None  # the stream being read (a grpc.Call), to cancel

    def finish(self) -> None:
        """Everything is written: read up to the head and end."""
        with self._lock:
            self.stop.set()
            if self._call is not None:
                self._call.cancel()

    @property
    def last(self) -> int:
        return self.items[-1][0] if self.items else 0

    def run(self) -> None:
        give_up = time.monotonic() + self.max_seconds
        stub = self.client.stubs["EventService"]
        while time.monotonic() < give_up:
            with self._lock:
                final = self.stop.is_set()
                request = pb.SubscribeEventsRequest(after_position=self.last, batch_size=500, stop_at_head=final)
                call = stub.SubscribeEvents(request, metadata=self.client.metadata, timeout=self.max_seconds)
                self._call = call
            self.subscriptions += 1
            try:
                for batch in call:
                    for n in batch.events:
                        self.items.append((n.position, stream_name(n.stream_kind), n.stream_id, n.event.sequence))
            except grpc.RpcError as error:
                code = error.code() if isinstance(error, grpc.Call) else None
                self.errors[code.name if code else "UNKNOWN"] += 1
                time.sleep(0.05)
                continue
            except Exception as error:  # the channel was closed under us (the harness is ending): stop
                self.errors[type(error).__name__] += 1
                return
            if final:
                self.done = True
                return
        self.errors["GAVE_UP"] += 1
