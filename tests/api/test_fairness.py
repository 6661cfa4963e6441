"""One caller's flood does not starve the others: workers shared in turn, streams shared by caller.

Attacks found from the outside: a player that kept 64 slow calls in flight (within its admission cap)
held all 16 workers, and another player's GetWallet waited over a second behind the flood; a player
that opened 16 WatchTable streams (and read their heartbeats, so they never went idle) left none for
anyone else, the operator included. Now one caller runs at most half the workers, waiting calls are
served caller by caller in turn (``api/fairness.py``), and one caller holds at most half of each
kind of stream.

A second attacker then kept its half of the workers busy with audits of its own closed round
(ExportRound, VerifyRound: each several times a cheap call's work): the bodies share one
interpreter, so another player's GetTable went from 1.3 ms to 36 ms at the median. Now the costly
calls (``Rpc.costly``: the audits, and List pages larger than the default) run only in
``Limits.costly_workers`` slots (one by default, one a caller, the callers in turn), taken before a
worker: with the same flood that GetTable took 1.8 ms.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import audit
from pokdeng_service.api import methods as api_methods
from pokdeng_service.api.admission import Limits, Runtime, caller_key
from pokdeng_service.api.errors import details_of
from pokdeng_service.api.fairness import FairWorkers

from .client import TIMEOUT, error_of, open_table, open_wallets
from .conftest import StartServer, make_app, sqlite_env
from .test_errors import Faulty

# --- the workers ---------------------------------------------------------------------------------


def test_one_caller_runs_at_most_its_share_and_the_others_still_get_a_worker() -> None:
    workers = FairWorkers(4, 2)
    assert workers.acquire("ann", 0) and workers.acquire("ann", 0)
    assert not workers.acquire("ann", 0.05)  # her share is taken: she waits (here: until the deadline)
    assert workers.waiting() == 0  # (a call that gave up leaves no place in the line)
    assert workers.acquire("bob", 0)  # two workers are still free for everyone else
    assert workers.running("ann") == 2 and workers.running("bob") == 1
    for key in ("ann", "ann", "bob"):
        workers.release(key)
    assert workers.running("ann") == 0 and workers.acquire("ann", 0)


def _queue(workers: FairWorkers, key: str, name: str, order: list[str]) -> threading.Thread:
    def take() -> None:
        assert workers.acquire(key, 10)
        order.append(name)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread


def test_freed_workers_go_to_the_waiting_callers_in_turn() -> None:
    workers = FairWorkers(1, 1)
    order: list[str] = []
    assert workers.acquire("ann", 0)
    threads = []
    for count, name in enumerate(("ann-2", "ann-3", "ann-4"), start=1):  # a flood, queued first
        threads.append(_queue(workers, "ann", name, order))
        _wait_for(lambda count=count: workers.waiting() == count)
    threads.append(_queue(workers, "bob", "bob-1", order))
    _wait_for(lambda: workers.waiting() == 4)
    for _ in range(4):
        before = len(order)
        workers.release("bob" if order and order[-1].startswith("bob") else "ann")
        _wait_for(lambda b=before: len(order) == b + 1)
    for thread in threads:
        thread.join(5)
    # bob waited for one call of ann's flood, not for all three
    assert order == ["ann-2", "bob-1", "ann-3", "ann-4"], order


def test_a_wait_that_ends_at_its_deadline_lets_the_next_in_line_go() -> None:
    workers = FairWorkers(1, 1)
    assert workers.acquire("ann", 0)
    assert not workers.acquire("bob", 0.05)
    order: list[str] = []
    thread = _queue(workers, "cyd", "cyd-1", order)
    _wait_for(lambda: workers.waiting() == 1)
    workers.release("ann")
    thread.join(5)
    assert order == ["cyd-1"] and workers.running("cyd") == 1 and workers.waiting() == 0


def _wait_for(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def test_the_limits_give_one_caller_half() -> None:
    limits = Limits(workers=16, max_streams={"watch": 16, "events": 1})
    assert limits.workers_per_caller == 8 and Limits(workers=2).workers_per_caller == 1
    assert limits.streams_per_caller("watch") == 8 and limits.streams_per_caller("events") == 1


class _Peer:
    def __init__(self, peer: str) -> None:
        self._peer = peer

    def peer(self) -> str:
        return self._peer


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        ("ipv4:10.0.0.5:53122", "anonymous@10.0.0.5"),
        ("ipv6:[::1]:40000", "anonymous@::1"),
        ("unix:/run/pokdeng.sock", "anonymous@unix:/run/pokdeng.sock"),
    ],
)
def test_callers_without_a_token_count_by_host(peer: str, key: str) -> None:
    assert caller_key(None, _Peer(peer)) == key  # type: ignore[arg-type]


class _Deadline:
    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds

    def time_remaining(self) -> float | None:
        return self.seconds

    def is_active(self) -> bool:
        return True


def _context(seconds: float | None = None) -> grpc.ServicerContext:
    """A call's context as the runtime reads it: its time remaining, and whether its client is still there."""
    return cast(grpc.ServicerContext, _Deadline(seconds))


def test_costly_bodies_run_one_at_a_time_beside_the_cheap_ones() -> None:
    runtime = Runtime(Limits(workers=4))
    assert runtime.limits.costly_workers == 1
    inside, most, cheap_ran = [0], [0], threading.Event()
    lock, release = threading.Lock(), threading.Event()

    def costly() -> None:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        release.wait(10)
        with lock:
            inside[0] -= 1

    context: Any = _Deadline()
    callers = [
        threading.Thread(target=runtime.run, args=(key, context, costly), kwargs={"costly": True}, daemon=True)
        for key in ("ann", "ann", "bob", "carl")
    ]
    for thread in callers:
        thread.start()
    _wait_for(lambda: inside[0] == 1)
    runtime.run("dan", context, cheap_ran.set)  # a cheap call: a worker at once, beside the costly one
    assert cheap_ran.is_set()
    with pytest.raises(Exception, match="costly slot"):  # a costly call waits for the slot, until its deadline
        runtime.run("dan", _context(0.05), costly, costly=True)
    time.sleep(0.1)
    assert most[0] == 1
    release.set()
    for thread in callers:
        thread.join(10)
    assert most[0] == 1 and inside[0] == 0


def test_the_audits_and_large_pages_are_the_costly_calls() -> None:
    """Found from the outside too: a player reading its own statement in pages of 1,000 lines (27 ms each)
    from 16 connections slowed another player's GetTable from 1.1 ms to 20 ms; 5.6 ms in the costly slot."""
    rpcs = {rpc.method: rpc for rpc in api_methods.RPCS}
    always = {name for name, rpc in rpcs.items() if rpc.costly is True}
    assert always == {"ReplayRound", "VerifyRound", "ExportRound", "GetInclusionProof", "GetConsistencyProof"}
    sometimes = {name for name, rpc in rpcs.items() if callable(rpc.costly)}
    assert sometimes == {"ListStatementEntries", "ListTables", "ListWallets", "ListRounds"}
    for name, message in (
        ("ListStatementEntries", pb.ListStatementEntriesRequest),
        ("ListTables", pb.ListTablesRequest),
        ("ListWallets", pb.ListWalletsRequest),
    ):
        assert not rpcs[name].is_costly(message()) and not rpcs[name].is_costly(message(page_size=100))
        assert rpcs[name].is_costly(message(page_size=101)) and rpcs[name].is_costly(message(page_size=1000))
    rounds = rpcs["ListRounds"]
    assert not rounds.is_costly(pb.ListRoundsRequest()) and not rounds.is_costly(pb.ListRoundsRequest(page_size=10))
    assert rounds.is_costly(pb.ListRoundsRequest(page_size=11))
    assert rounds.is_costly(pb.ListRoundsRequest(view=pb.ROUND_VIEW_FULL))
    assert not rpcs["GetTable"].is_costly(pb.GetTableRequest())
    with pytest.raises(ValueError, match="positive"):
        Limits(costly_workers=0)


# --- through the server --------------------------------------------------------------------------

HOLD = 2 * TIMEOUT  # how long a held call waits for its release: longer than any other call's deadline


def test_a_players_flood_of_slow_calls_leaves_another_players_call_at_once(
    tmp_path: Path, start_server: StartServer
) -> None:
    app = make_app(sqlite_env(tmp_path))
    release = threading.Event()
    started: list[str] = []

    def slow_for_alice(wallet_id: str) -> Any:
        if wallet_id == "alice":
            started.append(wallet_id)
            release.wait(HOLD)
        return app.get_wallet(wallet_id)

    served = start_server(Faulty(app, get_wallet=slow_for_alice), max_workers=4)  # 16 calls a caller in flight
    try:
        ops, alice, bob = served.api("operator"), served.api("alice"), served.api("bob")
        open_wallets(ops, ["alice", "bob"])
        stub = alice.method("WalletService", "GetWallet")
        flood = [stub.future(pb.GetWalletRequest(wallet_id="alice"), metadata=alice.metadata) for _ in range(12)]
        _wait_for(lambda: len(started) == 2)  # her share of the four workers: two run, ten wait
        time.sleep(0.1)
        assert len(started) == 2
        # a free worker at once: answered while her calls are held (behind them, past its deadline, it would fail)
        assert bob.wallet("bob").wallet_id == "bob"
        assert len(started) == 2 and not [f for f in flood if f.done()]
        release.set()
        for future in flood:
            assert future.result(timeout=TIMEOUT).wallet.wallet_id == "alice"
    finally:
        release.set()
        served.stop()
        app.close()


def test_a_flood_of_audits_runs_one_at_a_time_and_leaves_cheap_calls_at_once(
    tmp_path: Path, start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(sqlite_env(tmp_path))
    release = threading.Event()
    running, most = [0], [0]
    lock = threading.Lock()
    verify_round = audit.verify_round

    def slow_verify(reader: Any, round_id: str, **options: Any) -> Any:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            release.wait(HOLD)
            return verify_round(reader, round_id, **options)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(audit, "verify_round", slow_verify)  # (what AuditService/VerifyRound calls)
    served = start_server(app, max_workers=8)
    try:
        ops, auditor, bob = served.api("operator"), served.api("auditor"), served.api("bob")
        open_wallets(ops, ["bob"])
        verify = auditor.method("AuditService", "VerifyRound")
        flood = [verify.future(pb.VerifyRoundRequest(round_id="t#1"), metadata=auditor.metadata) for _ in range(6)]
        _wait_for(lambda: running[0] == 1)
        time.sleep(0.2)
        assert running[0] == 1  # the auditor's half of the workers would run four: one costly slot runs one
        # a cheap call of another caller at once: answered while the audit is held (behind it, past its deadline,
        # it would fail)
        assert bob.wallet("bob").wallet_id == "bob"
        assert running[0] == 1 and not [f for f in flood if f.done()]
        release.set()
        for future in flood:
            with pytest.raises(grpc.RpcError) as raised:  # (no such round: each ran, one after the other)
                future.result(timeout=TIMEOUT)
            assert raised.value.code() is grpc.StatusCode.NOT_FOUND
        assert most[0] == 1
    finally:
        release.set()
        served.stop()
        app.close()


def test_one_player_holds_at_most_half_the_watch_streams(tmp_path: Path, start_server: StartServer) -> None:
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app, max_workers=8)  # 8 watch streams, 4 a caller
    streams: list[Any] = []
    try:
        ops, alice, bob = served.api("operator"), served.api("alice"), served.api("bob")
        open_table(ops, "w", pb.PROFILE_CLASSIC, seats=3)
        request = pb.WatchTableRequest(table_id="w")

        def watch(api: Any) -> Any:
            stream = api.method("TableService", "WatchTable")(request, metadata=api.metadata, timeout=20)
            next(stream)  # open and served (the table's first event)
            streams.append(stream)
            return stream

        for _ in range(4):
            watch(alice)
        refused = details_of(error_of(lambda: watch(alice)))
        assert refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED and (refused.metadata or {}).get("limit") == "4", (
            refused
        )
        watch(bob)  # another player still watches
        watch(ops)  # and so does the operator
        assert served.server.runtime.streams["watch"] == 6
    finally:
        for stream in streams:
            stream.cancel()
        served.stop()
        app.close()


# --- a table's stream: bounded, read a page at a time, in the caller's turn ------------------------


def test_a_player_takes_at_most_four_seats_at_a_table_between_two_rounds(
    tmp_path: Path, start_server: StartServer
) -> None:
    """Found from the outside: TakeSeat and LeaveSeat in a loop wrote 310 table events a second, without end."""
    from pokdeng_core.limits import MAX_SEATINGS

    app = make_app(sqlite_env(tmp_path))
    served = start_server(app)
    try:
        ops, alice, bob = served.api("operator"), served.api("alice"), served.api("bob")
        open_wallets(ops, ["alice", "bob"])
        open_table(ops, "churn", pb.PROFILE_CLASSIC, seats=3)

        def take() -> pb.TakeSeatRequest:  # (a fresh message each time: the client gives it a request id)
            return pb.TakeSeatRequest(table_id="churn", player="alice", seat=1)

        for _ in range(MAX_SEATINGS):
            alice.cmd("TableService", "TakeSeat", take())
            alice.cmd("TableService", "LeaveSeat", pb.LeaveSeatRequest(table_id="churn", player="alice", seat=1))
        written = app.max_position
        refused = details_of(error_of(lambda: alice.cmd("TableService", "TakeSeat", take())))
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION and refused.reason == "TOO_MANY_SEATINGS", refused
        assert app.max_position == written
        bob.cmd("TableService", "TakeSeat", pb.TakeSeatRequest(table_id="churn", player="bob", seat=2))  # his own
        ops.cmd("RoundService", "StartRound", pb.StartRoundRequest(table_id="churn"))  # a round: seats again
        alice.cmd("TableService", "TakeSeat", take())
    finally:
        served.stop()
        app.close()


def test_a_watch_reads_a_long_history_a_page_at_a_time(
    tmp_path: Path, start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pokdeng_service.api import watch

    monkeypatch.setattr(watch, "WATCH_PAGE", 2)
    app = make_app(sqlite_env(tmp_path))
    served = start_server(app)
    try:
        ops = served.api("operator")
        open_wallets(ops, ["alice", "bob"])
        open_table(ops, "long", pb.PROFILE_CLASSIC, seats=3)
        for player, number in (("alice", 1), ("bob", 2)):
            ops.cmd("TableService", "TakeSeat", pb.TakeSeatRequest(table_id="long", player=player, seat=number))
            ops.cmd("TableService", "LeaveSeat", pb.LeaveSeatRequest(table_id="long", player=player, seat=number))
        version = ops.table("long").version
        stream = ops.method("TableService", "WatchTable")(
            pb.WatchTableRequest(table_id="long"), metadata=ops.metadata, timeout=10
        )
        sequences = []
        for item in stream:
            if item.HasField("event"):
                sequences.append(item.event.sequence)
            if len(sequences) == version - 1:
                stream.cancel()
                break
        assert sequences == list(range(2, version + 1))  # every event once, in order, across pages
    finally:
        served.stop()
        app.close()


def test_a_watch_waits_its_callers_turn_for_a_worker(tmp_path: Path, start_server: StartServer) -> None:
    """A stream's reads take a worker in the caller's turn, as its unary calls do: found from the outside,
    eight watches restarting from the start of a long table slowed another player's GetTable 90 times."""
    app = make_app(sqlite_env(tmp_path))
    release, started = threading.Event(), threading.Event()

    def slow_for_alice(wallet_id: str) -> Any:
        if wallet_id == "alice":
            started.set()
            release.wait(10)
        return app.get_wallet(wallet_id)

    served = start_server(Faulty(app, get_wallet=slow_for_alice), max_workers=2)  # one worker a caller
    try:
        ops, alice, bob = served.api("operator"), served.api("alice"), served.api("bob")
        open_wallets(ops, ["alice", "bob"])
        open_table(ops, "w", pb.PROFILE_CLASSIC, seats=3)
        held = alice.method("WalletService", "GetWallet").future(
            pb.GetWalletRequest(wallet_id="alice"), metadata=alice.metadata
        )
        assert started.wait(5)  # alice's one worker is taken
        request = pb.WatchTableRequest(table_id="w")
        theirs = bob.method("TableService", "WatchTable")(request, metadata=bob.metadata, timeout=10)
        assert next(theirs).HasField("event")  # bob's watch: the other worker, at once
        hers = alice.method("TableService", "WatchTable")(request, metadata=alice.metadata, timeout=10)
        first: list[Any] = []
        reader = threading.Thread(target=lambda: first.append(next(hers)), daemon=True)
        reader.start()
        reader.join(0.5)
        assert not first  # alice's watch waits for her own worker
        release.set()
        reader.join(5)
        assert first and first[0].HasField("event")
        assert held.result(timeout=5).wallet.wallet_id == "alice"
        theirs.cancel()
        hers.cancel()
    finally:
        release.set()
        served.stop()
        app.close()


def test_a_watch_reads_its_history_in_costly_slots_and_its_tail_in_plain_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found from the outside: 8 watches restarted from the start of a table of 3,700 events (within the
    player's share of streams) slowed another player's GetTable from 1.1 ms to 10 ms. A page of history
    (the first, and each after a full one) now takes a costly slot, and pages are of 64 events."""
    from pokdeng_service.api import watch

    assert watch.WATCH_PAGE == 64
    monkeypatch.setattr(watch, "WATCH_PAGE", 2)
    asked: list[bool] = []
    pages = [[1, 2], [3, 4], [5], [], [6]]

    class _Context:
        def is_active(self) -> bool:
            return bool(pages)

    class _Hub:
        closing = threading.Event()
        generation = 0

        def wait(self, generation: int, timeout: float) -> None:
            pass

    class _Env:
        hub, heartbeat, poll, token_key = _Hub(), 1e9, 0.0, b"k" * 32

        def fairly(self, call: Any, work: Any, *, costly: bool = False) -> Any:
            asked.append(costly)
            return work()

    def batch(after: int) -> tuple[list[Any], bool]:
        return [pb.RecordedEvent(sequence=n) for n in pages.pop(0)], False

    call: Any = type("C", (), {"context": _Context(), "active": lambda self: self.context.is_active()})()
    sent = list(watch._follow(_Env(), call, "WatchTable", "table_id", "t", 1, batch, pb.WatchTableResponse))  # type: ignore[arg-type]
    assert [r.event.sequence for r in sent if r.HasField("event")] == [1, 2, 3, 4, 5, 6]
    assert asked == [True, True, True, False, False]  # history while pages are full, then the tail


def test_a_worker_granted_after_the_client_gave_up_does_not_start_the_call() -> None:
    """Seen in CI under load: the server's deadline is the client's plus the transport's delay, so a call could
    be granted a worker after its client had already given up, and ran. It is checked again once granted."""
    runtime = Runtime(Limits(workers=2))
    ran: list[str] = []

    class _Gone(_Deadline):
        def is_active(self) -> bool:
            return False

    with pytest.raises(Exception, match="deadline passed"):
        runtime.run("ann", cast(grpc.ServicerContext, _Gone(5.0)), lambda: ran.append("late"))
    with pytest.raises(Exception, match="deadline passed"):
        runtime.run("ann", _context(-0.001), lambda: ran.append("past"))
    runtime.run("ann", _context(5.0), lambda: ran.append("on time"))
    assert ran == ["on time"]
