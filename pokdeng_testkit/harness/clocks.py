"""The turn clocks under replicas (``replicas``): tables whose every turn the servers' clocks must play out
(``clock_table``, ``run_clock_table``), and the check of each such round (``check_clock_round``: every wait
ended by exactly one timeout, never early, each by a turn clock's request, ``request_ids``)."""

from __future__ import annotations

import json
import time
from collections import Counter

from pokdeng_client.v1 import pokdeng_pb2 as pb

from .client import HarnessClient
from .driver import TableDriver, TableSpec

CLOCK_TIMEOUT = 1  # seconds


def clock_table(index: int) -> TableSpec:
    """The ``index``-th clock table: three players, its turns timed out after ``CLOCK_TIMEOUT`` seconds."""
    return TableSpec(
        f"clock-{index}",
        "classic",
        tuple(f"clock-{index}-p{j}" for j in range(3)),
        turn_timeout=CLOCK_TIMEOUT,
    )


def run_clock_table(driver: TableDriver, rounds: int, deadline: float, out: list[str]) -> None:
    """Start rounds, stake, deal, then wait: the replicas' turn clocks must play every turn out."""
    try:
        _clock_rounds(driver, rounds, deadline, out)
    except Exception as error:  # a thread's target: report, never die silently
        driver.unexpected.append(f"{type(error).__name__}: {error}")


def _clock_rounds(driver: TableDriver, rounds: int, deadline: float, out: list[str]) -> None:
    for _ in range(rounds):
        round_id = driver.next_round()
        assert round_id is not None
        opened = driver.round(round_id)
        for seat, player in driver.spec.expected_bets(opened):
            driver.command(
                driver.as_player[player],
                "RoundService",
                "PlaceBet",
                f"{round_id}:bet:{seat}:{player}",
                round_id=round_id,
                seat=seat,
                player=player,
                stake=driver.spec.stake(round_id, seat, player),
            )
        driver.command(driver.ops, "RoundService", "Deal", f"{round_id}:deal", round_id=round_id)
        while time.monotonic() < deadline:
            if driver.round(round_id).phase == pb.ROUND_PHASE_CLOSED:
                out.append(round_id)
                break
            time.sleep(0.1)
        else:
            return


def check_clock_round(
    found: list[str], early: list[str], r: pb.Round, timeout: float, requests: Counter[str]
) -> list[float]:
    """Each wait ended by one timeout (problems in ``found``), never early (``early``); returns the waits
    (seconds) before each timeout."""
    waits = []
    events = list(r.events)
    timed_out: Counter[int] = Counter()
    for i, event in enumerate(events):
        kind = event.WhichOneof("event")
        if kind in ("card_drawn", "player_stood"):
            reason = event.card_drawn.reason if kind == "card_drawn" else event.player_stood.reason
            if reason not in (pb.ACTION_REASON_TIMEOUT, pb.ACTION_REASON_AUTO):
                payload = json.loads(event.canonical_data) if event.canonical_data else {}
                found.append(f"{r.round_id}: a {kind} by choice in a round nobody played: {payload}")
        if kind != "turn_timed_out":
            continue
        seat = event.turn_timed_out.seat
        timed_out[seat] += 1
        wait = (event.record_time.ToDatetime() - events[i - 1].record_time.ToDatetime()).total_seconds()
        waits.append(wait)
        if wait < timeout - 0.01:
            before = events[i - 1]
            early.append(
                f"{r.round_id}: seat {seat} timed out after waiting {wait:.3f}s (< {timeout}s) by {event.request_id} "
                f"(the event before: {before.WhichOneof('event')} by {before.request_id})"
            )
        if not event.request_id.startswith("timeout:"):
            found.append(f"{r.round_id}: a timeout by {event.request_id}, not by a turn clock")
    for seat, n in timed_out.items():
        if n > 1:
            found.append(f"{r.round_id}: seat {seat} timed out {n} times")
    recorded = sum(n for rid, n in requests.items() if rid.startswith(f"timeout:{r.round_id}:"))
    if recorded != sum(timed_out.values()):
        found.append(f"{r.round_id}: {recorded} timeout requests recorded for {sum(timed_out.values())} timeouts")
    return waits


def request_ids(client: HarnessClient) -> Counter[str]:
    """Every request id recorded in the store, from the event feed."""
    out: Counter[str] = Counter()
    after = 0
    for _ in range(100_000):
        got = 0
        for batch in client.stubs["EventService"].SubscribeEvents(
            pb.SubscribeEventsRequest(after_position=after, batch_size=1000, stop_at_head=True),
            metadata=client.metadata,
            timeout=120,
        ):
            for n in batch.events:
                got += 1
                after = n.position
                if n.stream_kind == pb.STREAM_KIND_REQUEST:
                    out[n.event.request_accepted.request_id] += 1
        if not got:
            return out
    return out
