"""Streams whose readers stop reading lose their places, and no two callers can shut a third out.

Found from the outside: with ``--stream-idle 4``, two player tokens each opened 8 WatchTable streams (the
watch cap, 16, in two halves), took the first message and never read again: 18 s later all 16 were
open, and a third player's WatchRound of her own round was refused RESOURCE_EXHAUSTED. The idle limit
only ended a stream whose send waited on its client, and grpc's transport takes a few megabytes of
replies before a send waits: a quiet watch's heartbeats never get there. Now

* a watch or feed that had nothing but heartbeats to send for ``stream_idle`` seconds ends
  (CANCELLED, ``STREAM_IDLE``: its client calls again with its last token), whoever reads it;
* a stream whose send waits on its client that long is cancelled (CANCELLED, with the reason's message);
* at a kind's cap, a caller holding at least two streams fewer than the caller holding the most gets the
  place of one of that caller's streams (RESOURCE_EXHAUSTED, ``STREAM_PREEMPTED``): the third player's
  watch opens at once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import wrappers_pb2

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.api.admission import NUDGE, Limits, Runtime, StreamWatch
from pokdeng_service.api.auth import Authenticator, TokenEntry, TokenStore, token_digest
from pokdeng_service.api.errors import ResourceExhausted, StreamPreempted, details_of
from pokdeng_service.api.hub import EventHub
from pokdeng_service.api.rpcs import Env, Rpc
from pokdeng_service.api.server import HOUSEKEEPING
from pokdeng_service.api.wrapper import wrap
from pokdeng_service.application.principal import Principal, Role

from .client import Api, bet, open_table, open_wallets, seat, start_round
from .conftest import Served, StartServer, make_app, sqlite_env

OWN_CONNECTION = (("grpc.use_local_subchannel_pool", 1),)
STALLED = ("alice", "bob")
PER_STALLED = 8  # each stalled caller's share of the 16 watch streams of a 16-worker server


class Outcomes:
    """Records how each call ended (the server's observer, passed on to the one it had)."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.seen: list[tuple[str, str, str, Any]] = []
        self.lock = threading.Lock()

    def finished(self, rpc: Any, principal: Any, request: Any, *rest: Any) -> None:
        response, code, reason, seconds, context = rest
        with self.lock:
            self.seen.append((rpc.method, code, reason, request))
        if self.inner is not None:
            self.inner.finished(rpc, principal, request, response, code, reason, seconds, context)

    def of(self, method: str) -> list[tuple[str, str, Any]]:
        with self.lock:
            return [(code, reason, request) for m, code, reason, request in self.seen if m == method]


def _until(condition: Callable[[], bool], seconds: float, what: str) -> float:
    """Wait for ``condition``; the monotonic time it held."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
    return time.monotonic()


@dataclass
class Stalling:
    """A server whose callers open streams and stop reading them (``stall``), every call's end recorded
    (``outcomes``); ``_stalling`` cancels the streams and closes the connections and the server after."""

    served: Served
    outcomes: Outcomes
    streams: list[Any] = field(default_factory=list)
    channels: list[grpc.Channel] = field(default_factory=list)

    @property
    def runtime(self) -> Runtime:
        return self.served.server.runtime

    def stall(self, api: Api, service: str, method: str, request: Any, timeout: float = 120) -> tuple[Any, Any]:
        """A stream opened by ``api``'s caller, its first message taken, and nothing read after: the stream and
        that message."""
        stream = api.method(service, method)(request, metadata=api.metadata, timeout=timeout)
        self.streams.append(stream)
        return stream, next(stream)


@contextlib.contextmanager
def _stalling(tmp_path: Path, start_server: StartServer, **options: Any) -> Iterator[Stalling]:
    """A server (``start_server``'s ``options``) on a store of its own, its observer recording each call's end."""
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app, **options)
    runtime = served.server.runtime
    stalling = Stalling(served, Outcomes(runtime.observer))
    runtime.observer = stalling.outcomes
    try:
        yield stalling
    finally:
        for stream in stalling.streams:
            stream.cancel()
        for channel in stalling.channels:
            channel.close()
        served.stop()
        app.close()


def _stalled_watches(stalling: Stalling, tables: list[str]) -> tuple[list[tuple[str, Any]], float]:
    """Each stalled player opens ``PER_STALLED`` WatchTable streams (one a table) on a connection of its own,
    takes the first message of each and never reads again; the streams by table, and when the first opened."""
    streams = []
    first_opened = time.monotonic()
    for k, who in enumerate(STALLED):
        channel = grpc.insecure_channel(stalling.served.target, options=OWN_CONNECTION)
        stalling.channels.append(channel)
        api = Api(channel, stalling.served.api(who).token, ids=stalling.served.ids, prefix=who)
        for table in tables[k * PER_STALLED : (k + 1) * PER_STALLED]:
            stream, first = stalling.stall(api, "TableService", "WatchTable", pb.WatchTableRequest(table_id=table))
            assert first.HasField("event")
            streams.append((table, stream))
    return streams, first_opened


def _set_up(served: Served) -> tuple[Api, list[str], str]:
    """Wallets, one table a stalled stream, and carol's table with her round open; carol's round id."""
    ops = served.api("operator")
    open_wallets(ops, [*STALLED, "carol"])
    tables = [f"s{k}" for k in range(len(STALLED) * PER_STALLED)]
    for table in tables:
        open_table(ops, table, pb.PROFILE_CLASSIC, seats=2)
    open_table(ops, "c", pb.PROFILE_CLASSIC, seats=2)
    carol = served.api("carol")
    seat(carol, "c", "carol", 1)
    round_id = start_round(ops, "c").round_id
    bet(carol, round_id, 1, "carol", 100)
    return carol, tables, round_id


def _end_of(stream: Any) -> grpc.RpcError:
    """Read what a stream still holds to its end: the error it ended with."""
    try:
        for _ in stream:
            pass
    except grpc.RpcError as error:
        return error
    raise AssertionError("the stream ended with OK")


def test_readers_that_stop_reading_lose_their_watches_after_the_idle_limit_and_a_players_watch_opens(
    tmp_path: Path, start_server: StartServer
) -> None:
    idle, poll = 1.5, 0.2
    # 16 watch streams, 8 a caller; heartbeats never come within the test (they would not count anyway)
    options = {"max_workers": 16, "stream_idle": idle, "poll_interval": poll, "heartbeat": 3600.0}
    with _stalling(tmp_path, start_server, **options) as stalling:
        runtime, outcomes = stalling.runtime, stalling.outcomes
        carol, tables, round_id = _set_up(stalling.served)
        assert runtime.limits.streams("watch") == len(tables) == 16
        streams, first_opened = _stalled_watches(stalling, tables)
        last_opened = time.monotonic()
        assert runtime.streams["watch"] == 16

        # the idle limit ends them all: never before it, and soon after (the housekeeping's round, the body's
        # next look, a margin for a loaded machine)
        bound = idle + HOUSEKEEPING + poll + NUDGE + 5.0
        freed = _until(lambda: runtime.streams.get("watch", 0) == 0, bound, f"still open: {runtime.streams}")
        assert freed - first_opened >= idle
        print(f"\n16 stalled watches ended {freed - last_opened:.2f} s after the last opened (idle limit {idle} s)")
        for table, stream in streams:
            ended = details_of(_end_of(stream))
            assert ended.code == grpc.StatusCode.CANCELLED and ended.reason == "STREAM_IDLE", (table, ended)
            assert "call again with the last resume token" in ended.message
        logged = outcomes.of("WatchTable")
        assert [(code, reason) for code, reason, _ in logged] == [("CANCELLED", "STREAM_IDLE")] * 16

        # carol's own round: her watch opens (and, as any watch, is ended once idle in its turn)
        _, first = stalling.stall(carol, "RoundService", "WatchRound", pb.WatchRoundRequest(round_id=round_id))
        assert first.event.sequence == 2


def test_two_callers_holding_every_watch_cannot_shut_a_third_out(tmp_path: Path, start_server: StartServer) -> None:
    # the default idle limit: nothing here is ended for idleness
    with _stalling(tmp_path, start_server, max_workers=16) as stalling:
        runtime, outcomes, served = stalling.runtime, stalling.outcomes, stalling.served
        carol, tables, round_id = _set_up(served)
        streams, _ = _stalled_watches(stalling, tables)
        assert runtime.streams["watch"] == runtime.limits.streams("watch") == 16  # the lockout

        began = time.monotonic()
        _, first = stalling.stall(carol, "RoundService", "WatchRound", pb.WatchRoundRequest(round_id=round_id))
        assert first.event.sequence == 2  # her watch opens at once
        opened = time.monotonic() - began
        print(f"\ncarol's WatchRound under the lockout: first message after {1000 * opened:.1f} ms")
        assert opened < runtime.limits.stream_idle  # (not because a stalled stream went idle)
        assert runtime.streams["watch"] == 16
        held = {who: runtime.caller_streams["watch", _key(runtime, who)] for who in STALLED}
        assert sorted(held.values()) == [7, 8], held  # one of the two gave up a place

        # the stream that gave its place up ends with RESOURCE_EXHAUSTED (STREAM_PREEMPTED); the rest are open
        _until(lambda: len(outcomes.of("WatchTable")) == 1, 10, "the preempted stream did not end")
        ((code, reason, request),) = outcomes.of("WatchTable")
        assert (code, reason) == ("RESOURCE_EXHAUSTED", "STREAM_PREEMPTED")
        victim = dict(streams)[request.table_id]
        ended = details_of(_end_of(victim))
        assert ended.code == grpc.StatusCode.RESOURCE_EXHAUSTED and ended.reason == "STREAM_PREEMPTED", ended
        assert ended.metadata is not None and ended.metadata["limit"] == "16"

        # the holder of 7 cannot take a place back from the holder of 8 (one fewer is fair), nor can
        # the one holding 8 open a ninth
        for who in STALLED:
            api = served.api(who)
            request = pb.WatchTableRequest(table_id="c")
            refused = details_of(
                _end_of(api.method("TableService", "WatchTable")(request, metadata=api.metadata, timeout=10))
            )
            assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED and refused.reason == "RESOURCE_EXHAUSTED"


def test_a_feed_given_the_place_of_anothers_opens_although_that_one_still_holds_the_hubs(
    tmp_path: Path, start_server: StartServer
) -> None:
    """SubscribeEvents also counts its subscribers in the event hub: the one whose place was given away
    leaves the hub within its poll, and the newcomer waits for that (``events.HANDOVER``)."""
    auditors = {name: f"{name}-feed-token-0123456789" for name in ("ann", "ben", "cat")}
    tokens = TokenStore(TokenEntry(token_digest(t), Principal(Role.AUDITOR, None, n)) for n, t in auditors.items())
    # 2 a caller
    with _stalling(tmp_path, start_server, tokens=tokens, max_subscriptions=4, poll_interval=3600.0) as stalling:
        runtime, served = stalling.runtime, stalling.served
        feeds = []
        for name in ("ann", "ann", "ben", "ben", "cat"):
            api = served.api(None, token=auditors[name])
            request = pb.SubscribeEventsRequest(after_position=0, batch_size=10)
            feed, first = stalling.stall(api, "EventService", "SubscribeEvents", request)
            assert first.caught_up  # (an empty log: caught up at once)
            feeds.append(feed)
        assert runtime.streams["events"] == 4 and served.server.hub.max_subscribers == 4
        # (its poll never comes: the one that gave its place up is cancelled after NUDGE, with its status)
        _until(lambda: any(feed.done() for feed in feeds[:4]), NUDGE + HOUSEKEEPING + 5.0, "no feed gave way")
        (ended,) = [details_of(_end_of(feed)) for feed in feeds[:4] if feed.done()]
        assert ended.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "make room" in ended.message, ended
        assert not feeds[4].done() and runtime.streams["events"] == 4


def _key(runtime: Runtime, who: str) -> str:
    """The caller key of a player token of the API tests (``Principal.scope``)."""
    keys = {key for (kind, key) in runtime.caller_streams if kind == "watch" and who in key}
    assert len(keys) == 1, keys
    return keys.pop()


# --- a stream whose send waits on its client: flow control ----------------------------------------


def test_a_reader_that_stops_reading_a_busy_stream_is_cancelled_once_a_send_waits_past_the_limit() -> None:
    """A stream that has a lot to send fills the client's transport buffers (a few megabytes) and then
    grpc's send waits: past the idle limit, the stream is cancelled with its reason's code and message."""
    idle = 1.0
    outcomes = Outcomes()
    runtime = Runtime(Limits(stream_idle=idle, max_streams={"flood": 2}), outcomes)
    sent = [0]

    def body(_env: Env, context: grpc.ServicerContext, _request: Any) -> Iterator[wrappers_pb2.BytesValue]:
        while context.is_active():
            yield wrappers_pb2.BytesValue(value=b"x" * 16384)
            sent[0] += 1

    rpc = Rpc(
        "Flood",
        "Read",
        frozenset(),
        body,
        streaming=True,
        package="test.v1",
        request_type=wrappers_pb2.BytesValue,
        response_type=wrappers_pb2.BytesValue,
        open=True,
        store=False,
        kind="flood",
    )
    env = Env(service=None, hub=EventHub(1))  # type: ignore[arg-type]
    handler = wrap(rpc, env, Authenticator(TokenStore.from_tokens([])), runtime)
    server = grpc.server(
        futures.ThreadPoolExecutor(4),
        handlers=[grpc.method_handlers_generic_handler("test.v1.Flood", {"Read": handler})],
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stop = threading.Event()

    def keep_house() -> None:
        while not stop.wait(HOUSEKEEPING):
            runtime.reap()

    housekeeping = threading.Thread(target=keep_house, daemon=True)
    housekeeping.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stream = channel.unary_stream(
            "/test.v1.Flood/Read",
            request_serializer=wrappers_pb2.BytesValue.SerializeToString,
            response_deserializer=wrappers_pb2.BytesValue.FromString,
        )(wrappers_pb2.BytesValue(), timeout=120)
        next(stream)
        stopped_reading = time.monotonic()
        _until(lambda: bool(outcomes.of("Read")), 60, "the stalled stream was not ended")
        assert time.monotonic() - stopped_reading >= idle
        ((code, reason, _),) = outcomes.of("Read")
        assert (code, reason) == ("CANCELLED", "STREAM_STALLED")
        assert not runtime.streams  # its place is free
        taken = 1
        with pytest.raises(grpc.RpcError) as raised:
            for _ in stream:  # what the transport held, then the status
                taken += 1
        assert raised.value.code() == grpc.StatusCode.CANCELLED
        assert "took no message" in (raised.value.details() or "")
        assert taken > 64  # (the transport held megabytes before the send waited)
        print(f"\nthe server sent {sent[0]} replies of 16 KiB; the transport held {taken} of them")
    finally:
        stop.set()
        housekeeping.join(5)
        channel.close()
        server.stop(0).wait(5)


# --- the places, without a server -----------------------------------------------------------------


class _Context:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _open(runtime: Runtime, key: str, quiet: bool = True) -> tuple[StreamWatch, _Context]:
    context = _Context()
    return runtime.open_stream("watch", context, key, quiet=quiet), context  # type: ignore[arg-type]


def test_a_newcomer_takes_the_place_of_a_stream_of_the_caller_holding_the_most() -> None:
    runtime = Runtime(Limits(max_streams={"watch": 4}))  # 2 a caller
    a = [_open(runtime, "a") for _ in range(2)]
    b = [_open(runtime, "b") for _ in range(2)]
    a[1][0].waiting_since = time.monotonic() - 100  # blocked on its client for long: the first to go
    c1, _ = _open(runtime, "c")  # full: one of the holders of 2 gives way
    given = [w for w, _ in a + b if w.end is not None]
    assert given == [a[1][0]] and isinstance(given[0].end, StreamPreempted)
    assert not a[1][1].cancelled  # (told to end; cancelled only if it has not within NUDGE)
    assert runtime.streams["watch"] == 4 and runtime.caller_streams["watch", "c"] == 1
    d1, _ = _open(runtime, "d")  # the other holder of 2 gives way
    assert sorted(runtime.caller_streams[("watch", k)] for k in "abcd") == [1, 1, 1, 1]
    with pytest.raises(ResourceExhausted) as refused:  # everyone holds one: no one gives way to a fifth
        _open(runtime, "e")
    assert refused.value.metadata["limit"] == "4" and not isinstance(refused.value, StreamPreempted)
    with pytest.raises(ResourceExhausted):  # nor to a caller holding one already
        _open(runtime, "c")
    ended = [(w, c) for w, c in a + b if w.end is not None]
    assert len(ended) == 2
    for watch, context in ended:  # a quiet stream ends by itself (``Call.active``): not cancelled yet
        assert not context.cancelled and not watch.active
        watch.ended_at -= NUDGE + 0.1  # one that does not end within NUDGE is cancelled
    runtime.reap()
    assert all(context.cancelled for _, context in ended)
    for watch, _ in [*a, *b]:
        runtime.close_stream("watch", watch)  # (a place given away is not counted off again)
    assert runtime.streams["watch"] == 2 and runtime.caller_streams == {("watch", "c"): 1, ("watch", "d"): 1}
    runtime.close_stream("watch", c1)
    runtime.close_stream("watch", d1)
    assert not runtime.streams and not runtime.caller_streams


def test_a_caller_one_stream_behind_the_top_takes_no_place_and_a_stream_that_does_not_look_is_cancelled() -> None:
    runtime = Runtime(Limits(max_streams={"watch": 6}))  # 3 a caller
    held = [_open(runtime, "a", quiet=False) for _ in range(3)] + [_open(runtime, "b") for _ in range(2)]
    with pytest.raises(ResourceExhausted):
        _open(runtime, "a")  # its share
    _open(runtime, "c")  # the sixth place: nobody gives way
    assert all(w.active for w, _ in held)
    newcomer, _ = _open(runtime, "d")  # 0 against 3: a place of a's (a's bodies do not look: cancelled at once)
    ((watch, context),) = [(w, c) for w, c in held if w.end is not None]
    assert watch.key == "a" and context.cancelled
    with pytest.raises(ResourceExhausted):
        _open(runtime, "d")  # 1 against at most 2: one behind the top is fair, no place taken
    assert newcomer.active and runtime.streams["watch"] == 6


def test_a_quiet_stream_is_told_to_end_after_the_idle_limit_and_heartbeats_do_not_count() -> None:
    runtime = Runtime(Limits(max_streams={"watch": 4}, stream_idle=0.2))
    quiet, quiet_context = _open(runtime, "a")
    busy, _ = _open(runtime, "b")
    plain, plain_context = _open(runtime, "c", quiet=False)  # not under the quiet rule (reflection, say)
    time.sleep(0.3)
    busy.progress()  # it sent an event just now
    assert runtime.reap() == 1
    assert quiet.end is not None and quiet.end.reason == "STREAM_IDLE" and not quiet_context.cancelled
    assert busy.active and plain.active and not plain_context.cancelled
    assert runtime.reap() == 0  # once
