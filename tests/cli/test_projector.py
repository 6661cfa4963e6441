"""``pokdeng serve`` projects its read models in a child process (``pokdeng_service.projector``).

The child keeps the views current (a round played through the server is listed by ``ListRounds``),
is started again when it dies while the server runs, and stops by itself when the server dies,
whatever kills it (its standard input ends). ``--read-models thread`` keeps the projection in the
server's process (no child), ``off`` keeps no read models (the list calls say so).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.partitions import partition_of
from pokdeng_service.projector import RESTART_FIRST, RESTART_MOST, restart_pause
from pokdeng_testkit.harness.client import HarnessClient
from pokdeng_testkit.harness.driver import TableDriver, make_tables
from pokdeng_testkit.harness.server import ServerProcess, Store, servers
from pokdeng_testkit.harness.tokens import Tokens
from pokdeng_testkit.ports import free_port

CHILD = "pokdeng_service.projector"


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return [p for p in found if _alive(p)]


def projectors(pid: int) -> list[int]:
    out = []
    for child in children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if CHILD.encode() in command:
            out.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T], timeout: float = 20.0) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


class Served:
    def __init__(self, server: ServerProcess, drivers: list[TableDriver]) -> None:
        self.server = server
        self.drivers = drivers
        self.driver = drivers[0]

    @property
    def pid(self) -> int:
        assert self.server.proc is not None
        return self.server.proc.pid

    def play_round(self, driver: TableDriver | None = None) -> str:
        driver = driver or self.driver
        before = len(driver.closed)
        driver.play(threading.Event(), max_rounds=before + 1)
        assert len(driver.closed) == before + 1, driver.unexpected
        return driver.closed[-1]

    def listed(self, table: str | None = "") -> set[str]:
        """The closed rounds ListRounds lists: of the first table, of ``table``, or (None) of every table."""
        named = self.driver.spec.table_id if table == "" else table or ""
        answer = self.driver.client.call("RoundService", "ListRounds", table_id=named, page_size=100)
        return {r.round_id for r in answer.rounds if r.phase == pb.ROUND_PHASE_CLOSED}


@contextlib.contextmanager
def serve(tmp_path: Path, *extra: str, lobbies: tuple[str, ...] = ("",)) -> Iterator[Served]:
    """``pokdeng serve`` with ``extra`` flags, and a table in each lobby (a shard: ``<lobby>/<table>``)."""
    specs = [make_tables(f"{lobby}/proj" if lobby else "proj", 1)[0] for lobby in lobbies]
    tokens = Tokens.for_players([w for spec in specs for w in spec.wallets])
    with servers() as running:
        server = ServerProcess(
            Store.sqlite(tmp_path / "pokdeng.sqlite"),
            tokens.write(tmp_path / "tokens.json"),
            tmp_path / "server.log",
            workers=4,
            extra_args=extra,
        )
        running.append(server)
        server.start()
        drivers = [TableDriver(spec, HarnessClient(server.target, tokens.operator), tokens) for spec in specs]
        try:
            for driver in drivers:
                driver.setup()
            yield Served(server, drivers)
        finally:
            for driver in drivers:
                driver.client.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serve(tmp_path) as running:
        yield running


def test_the_read_models_follow_the_log_in_a_child_process(served: Served) -> None:
    (child,) = wait_for("a projector child", lambda: projectors(served.pid))
    played = served.play_round()
    wait_for("the round in ListRounds", lambda: played in served.listed())
    assert projectors(served.pid) == [child]


def test_one_child_projects_every_partition(tmp_path: Path) -> None:
    lobbies = tuple(next(f"lobby{n}" for n in range(100) if partition_of(f"lobby{n}/t", 3) == k) for k in range(3))
    with serve(tmp_path, "--partitions", "3", lobbies=lobbies) as served:
        (child,) = wait_for("a projector child", lambda: projectors(served.pid))
        played = {served.play_round(driver) for driver in served.drivers}
        wait_for("every partition's round in ListRounds", lambda: played <= served.listed(table=None))
        assert projectors(served.pid) == [child]


def test_a_projector_that_dies_is_started_again_and_goes_on(served: Served) -> None:
    (first,) = wait_for("a projector child", lambda: projectors(served.pid))
    os.kill(first, signal.SIGKILL)
    (second,) = wait_for("another projector child", lambda: [p for p in projectors(served.pid) if p != first])
    played = served.play_round()
    wait_for("the round in ListRounds", lambda: played in served.listed())
    assert projectors(served.pid) == [second]
    log = served.server.log_path.read_text(errors="replace")
    assert f"projector process {first} exited" in log


def test_the_projector_stops_when_the_server_is_killed(served: Served) -> None:
    (child,) = wait_for("a projector child", lambda: projectors(served.pid))
    served.server.kill()  # SIGKILL: the server cannot tell its child anything
    wait_for("the projector to stop", lambda: not _alive(child))  # (its input closes: it stops within its 0.5 s wait)


def test_the_projector_stops_with_the_server(served: Served) -> None:
    (child,) = wait_for("a projector child", lambda: projectors(served.pid))
    assert served.server.stop() == 0
    assert not _alive(child)


def test_read_models_in_a_thread_start_no_child(tmp_path: Path) -> None:
    with serve(tmp_path, "--read-models", "thread") as served:
        played = served.play_round()
        wait_for("the round in ListRounds", lambda: played in served.listed())
        assert projectors(served.pid) == []


def test_read_models_off_keep_no_views_and_say_so(tmp_path: Path) -> None:
    with serve(tmp_path, "--read-models", "off") as served:
        assert projectors(served.pid) == []
        with pytest.raises(grpc.RpcError) as refused:
            served.driver.client.call("TableService", "ListTables")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        metadata: dict[str, Any] = dict(cast(Any, refused.value.trailing_metadata()) or ())
        details = metadata["grpc-status-details-bin"]
        assert b"NO_READ_MODELS" in details  # (the ErrorInfo's reason)


def gauge(url: str, name: str, **labels: str) -> float | None:
    """A sample of the metrics endpoint at ``url``, or None when it has none."""
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def test_the_metrics_say_how_far_behind_the_views_are_and_how_often_the_child_came_back(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with serve(tmp_path, "--metrics-port", str(port)) as served:
        (first,) = wait_for("a projector child", lambda: projectors(served.pid))
        served.play_round()
        wait_for("the views caught up", lambda: gauge(url, "pokdeng_read_models_behind", partition="0") == 0)
        assert gauge(url, "pokdeng_read_models_restarts_total") == 0
        os.kill(first, signal.SIGSTOP)  # a projector that stops working: the log grows, the views do not
        try:
            served.play_round()
            assert (gauge(url, "pokdeng_read_models_behind", partition="0") or 0) > 0
        finally:
            os.kill(first, signal.SIGKILL)
        wait_for("a new child", lambda: [p for p in projectors(served.pid) if p != first])
        wait_for("the restart counted", lambda: gauge(url, "pokdeng_read_models_restarts_total") == 1)
        wait_for("the views caught up again", lambda: gauge(url, "pokdeng_read_models_behind", partition="0") == 0)


def test_the_pause_before_a_restart_doubles_while_the_child_keeps_failing_and_starts_over_after_a_good_run() -> None:
    pauses, pause = [], None
    for _ in range(7):  # children that die at once
        pause = restart_pause(pause, lived=0.5)
        pauses.append(pause)
    assert pauses == [RESTART_FIRST, 2.0, 4.0, 8.0, 16.0, RESTART_MOST, RESTART_MOST]
    assert restart_pause(RESTART_MOST, lived=RESTART_MOST - 1) == RESTART_MOST  # still failing soon after a start
    assert restart_pause(RESTART_MOST, lived=RESTART_MOST) == RESTART_FIRST  # it ran well: not a failing child
    assert restart_pause(RESTART_MOST, lived=3600.0) == RESTART_FIRST
