"""The turn clock: a hand that does not act within its table's turn timeout gets the automatic action.

The clock follows the notification log to know which rounds are open and when each
last moved. When a round waits on a decision (a player's or banker's choice, or the
kingmaker side-bet window) for longer than the table's ``turn_timeout``, it issues
``TimeOutTurn`` with the request id ``timeout:<round id>:<round version>``. Several
service replicas may run clocks on one store: they issue the same request id, so the
idempotent command pipeline lets exactly one of them act.

A player-banker that disconnected during the round (``banker_disconnected`` on the
table's stream) is waited for only its profile's reconnection window (room: 5 seconds,
RULES.md), counted from the later of the disconnection and the start of its turn; after
that its turn is played by the timeout rule like anyone's.

The log names streams, and anyone who can write to the store can add one: the clock acts
only through the application, which refuses a round whose stream is not what it claims
(its uuid, its chain, its table's opening of it: docs/audit.md). Such a round is skipped,
logged and never looked at again (``refused``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from eventsourcing.utils import get_topic

from pokdeng_core import events as re
from pokdeng_core import table_events as te
from pokdeng_core.errors import DomainError
from pokdeng_core.profiles import get_profile
from pokdeng_core.round_state import Phase
from pokdeng_service.application.errors import StreamForged
from pokdeng_service.application.principal import TURN_CLOCK
from pokdeng_service.application.round_commands import TimeOutTurn
from pokdeng_service.store.aggregates import ROUND_FACTS, TABLE_FACTS

log = logging.getLogger(__name__)

WAITING_PHASES = {p.value for p in (Phase.SIDE_BETS, Phase.PLAYER_TURNS, Phase.BANKER_TURN)}


_BANKER_BACK_OR_GONE = frozenset(
    {te.BankerReconnected.kind, te.BankerRoleEnded.kind, te.BankerAssigned.kind, te.RoundFinished.kind}
)
FOLLOWED_TOPICS = tuple(
    sorted(
        {get_topic(ROUND_FACTS[kind]) for kind in (re.RoundOpened.kind, re.RoundClosed.kind)}
        | {get_topic(TABLE_FACTS[kind]) for kind in _BANKER_BACK_OR_GONE | {te.BankerDisconnected.kind}}
    )
)
"""The stored topics the clock reads: a round's opening and closing, a banker's disconnection and what ends
it. The store selects them, so the clock reads and decodes none of the other events of the log (about
twenty per round)."""


class TurnClock:
    def __init__(self, app: Any, interval: float = 0.5, now: Callable[[], datetime] | None = None) -> None:
        self.app = app
        self.interval = interval
        self.now = now or (lambda: datetime.now(tz=UTC))
        self.position = 0
        self.open_rounds: set[str] = set()  # rounds opened and not closed, as the log says
        self.refused: set[str] = set()  # rounds whose stream the application refused (StreamForged)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # table id -> (turn timeout, a disconnected banker's reconnection window or None), seconds
        self._waits: dict[str, tuple[int, int | None]] = {}
        self.disconnected: dict[str, datetime] = {}  # table id -> when its banker disconnected this round
        self.failing: str | None = None  # the failure of the running clock's ticks since the last good one

    def follow(self) -> None:
        """Read new notifications: rounds that opened, moved or closed."""
        while True:
            batch = self.app.log_activity(self.position, 1000, FOLLOWED_TOPICS)  # (without the data)
            if not batch:
                return
            for item in batch:
                if item.stream == "round":
                    if item.kind == re.RoundClosed.kind:
                        self.open_rounds.discard(item.stream_id)
                    elif item.kind == re.RoundOpened.kind and item.stream_id not in self.refused:
                        self.open_rounds.add(item.stream_id)
                elif item.stream == "table":
                    if item.kind == te.BankerDisconnected.kind:
                        self.disconnected[item.stream_id] = datetime.fromisoformat(item.timestamp)
                    elif item.kind in _BANKER_BACK_OR_GONE:
                        self.disconnected.pop(item.stream_id, None)
            self.position = batch[-1].position

    def tick(self) -> list[str]:
        """Time out every round that has waited too long; returns the rounds timed out.

        The wait is measured from the round's own last event, read together with its state and
        version, and the timeout is conditional on that version: a round that moved in the
        meantime (a player acted, another replica's clock fired) is left for a later tick.
        """
        self.follow()
        now = self.now()
        fired = []
        for round_id in sorted(self.open_rounds):
            try:
                if self._time_out(round_id, now):
                    fired.append(round_id)
            except StreamForged as error:  # never acted on (the alert is logged by the loader)
                self.open_rounds.discard(round_id)
                self.refused.add(round_id)
                log.error("turn clock: round %r skipped, its stream is refused: %s", round_id, error)
            except Exception:  # one round that cannot be read holds up no other round's timeout
                log.exception("turn clock: round %r could not be timed out (tried again next tick)", round_id)
        return fired

    def _time_out(self, round_id: str, now: datetime) -> bool:
        """Time out the round if it has waited too long; whether it was timed out."""
        view = self.app.get_round(round_id, with_events=False)
        if view.phase not in WAITING_PHASES:
            return False
        moved = self.app.round_moved_at(round_id, view.version)
        if moved is None or not self._due(view.table_id, view.phase, moved, now):
            return False
        try:
            self.app.handle(TURN_CLOCK, f"timeout:{round_id}:{view.version}", TimeOutTurn(round_id, view.version))
        except StreamForged:
            raise
        except DomainError as error:  # another replica acted first, or the round moved on
            log.debug("timeout of %s skipped: %s", round_id, error)
            return False
        return True

    def _due(self, table_id: str, phase: str, moved: datetime, now: datetime) -> bool:
        """Whether the hand to act has waited long enough: the table's turn timeout, or a
        disconnected banker's reconnection window (from the later of its disconnection and
        the start of its turn)."""
        timeout, window = self._wait_rules(table_id)
        if (now - moved).total_seconds() >= timeout:
            return True
        gone = self.disconnected.get(table_id)
        if gone is None or window is None or phase != Phase.BANKER_TURN.value:
            return False
        return (now - max(moved, gone)).total_seconds() >= window

    def _wait_rules(self, table_id: str) -> tuple[int, int | None]:
        """The table's turn timeout and its profile's reconnection window (fixed for a table: read once)."""
        rules = self._waits.get(table_id)
        if rules is None:
            table = self.app.get_table(table_id)
            bid = get_profile(table.profile, table.profile_version).banker_bid
            rules = self._waits[table_id] = (int(table.turn_timeout), None if bid is None else bid.reconnect_seconds)
        return rules

    def tick_logged(self) -> None:
        """One tick of the running clock: a failure is logged once, as one WARNING line, when it starts
        (and again only if it changes), not on every tick that meets it (a store that is down during a
        failover fails a tick each ``interval``); an INFO line says when ticks work again. The failure's
        traceback goes to DEBUG."""
        try:
            self.tick()
        except Exception as error:  # keep the clock running; the next tick retries
            text = str(error).strip().splitlines()
            failure = f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
            if failure != self.failing:
                log.warning("turn clock: its ticks fail (tried again every %g s): %s", self.interval, failure)
                log.debug("turn clock: the failed tick", exc_info=True)
            self.failing = failure
            return
        if self.failing is not None:
            log.info("turn clock: its ticks work again (after %s)", self.failing)
            self.failing = None

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.interval):
                self.tick_logged()

        self._thread = threading.Thread(target=loop, name="pokdeng-turn-clock", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
