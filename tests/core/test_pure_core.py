"""The core is pure: no module-level mutable state, decisions that carry their own folds, one set of limits.

``decide_and_fold`` returns a ``Decision(events, state)`` whose state is the replay of its events
(so the shell keeps it instead of folding again), and nothing a decision computes is left behind
for another call (or another thread) to find. Ids are checked by ``limits``: look-alike and
invisible characters are refused by the table and round machines themselves.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
import re
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import pytest

import pokdeng_core
from pokdeng_core import commands as c
from pokdeng_core import events as e
from pokdeng_core import limits, machine, shuffle, table, table_commands, table_events
from pokdeng_core.deciding import Decision
from pokdeng_core.errors import InvalidCommand
from pokdeng_core.machine import decide, decide_and_fold
from pokdeng_core.profiles import CLASSIC_V1, PROFILE_NAMES, ROOM_V1
from pokdeng_core.round_evolve import evolve, replay
from pokdeng_core.round_state import RoundState, attach_shoe
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment
from pokdeng_core.table import TableDecision, decide_and_fold_table, decide_table
from pokdeng_core.table_commands import (
    BidForBanker,
    CloseBankerBid,
    FinishRound,
    OpenTable,
    RecordCheckpoint,
    StartRound,
    TableCommand,
    TakeSeat,
)
from pokdeng_core.table_state import TableState, evolve_table, replay_table

from .rounds import Round, open_round, play_randomly

CORE = Path(pokdeng_core.__file__).parent


def _core_modules() -> Iterator[ModuleType]:
    for info in pkgutil.iter_modules(pokdeng_core.__path__):
        yield importlib.import_module(f"pokdeng_core.{info.name}")


# --- decisions carry their folds -----------------------------------------------------------


def _played(profile: str, n: int) -> Round:
    """Round ``n`` of ``profile``: random legal play from its own seed; every fourth round voided."""
    rnd = random.Random(f"{profile}/{n}")
    played = open_round(profile, server_seed=bytes([n + 1]) * 32)
    return play_randomly(played, rnd, void_at=rnd.randint(1, 6) if n % 4 == 3 else None)


ROUNDS = [(profile, n) for profile in PROFILE_NAMES for n in range(4)]


def _opened(profile: str, n: int) -> RoundState:
    """The state ``_played`` starts from once the round is open (its shoe attached)."""
    return open_round(profile, server_seed=bytes([n + 1]) * 32).state


def test_a_decision_is_a_named_pair_of_events_and_state() -> None:
    assert Decision._fields == ("events", "state")
    played = open_round("classic")
    decision = decide_and_fold(played.state, c.PlaceBet(1, "p1", 100, 10**9))
    events, state = decision
    assert (events, state) == (decision.events, decision.state)
    assert events == decide(played.state, c.PlaceBet(1, "p1", 100, 10**9))
    assert isinstance(events, tuple) and isinstance(state, RoundState)


@pytest.mark.parametrize(("profile", "n"), ROUNDS)
def test_the_decided_state_is_the_replay_of_the_decided_events(profile: str, n: int) -> None:
    played = _played(profile, n)
    assert played.state.is_closed
    state = _opened(profile, n)
    for command, produced in zip(played.commands[1:], played.produced[1:], strict=True):
        events, after = decide_and_fold(state, command)
        assert events == produced
        assert after == replay(events, state)
        assert after.shoe is state.shoe  # the private shoe rides along
        state = after
    assert state == played.state
    assert replay(played.events) == state  # from the very start, the shoe aside (it is no field of equality)


def test_evolve_is_a_plain_fold_with_no_memory_of_decisions() -> None:
    assert not hasattr(machine, "_folded")
    played = _played("kingmaker", 1)
    state = _opened("kingmaker", 1)
    done = len(played.produced[0])
    for command in played.commands[1:]:
        events, after = decide_and_fold(state, command)
        # the very event objects folded into an equal state rebuilt from the log fold the same way
        rebuilt = replay(played.events[:done])
        assert rebuilt == state and rebuilt is not state
        assert replay(events, rebuilt) == after
        done += len(events)
        state = after
    assert done == len(played.events)


# --- threads -------------------------------------------------------------------------------


def _table_script() -> list[TableCommand]:
    return [
        OpenTable("t-threads", ROOM_V1, 10, 100, 5),
        TakeSeat("a", 1),
        TakeSeat("b", 2),
        BidForBanker("a", 5, 10_000),
        BidForBanker("b", 10, 10_000),
        CloseBankerBid(),
        StartRound("t-threads#1", (("a", 10_000), ("b", 10_000))),
        FinishRound("t-threads#1", "settled", 5, 1, 10_000),
        RecordCheckpoint("p", 1, 1, 1, "ab" * 32),
    ]


def _everything() -> list[tuple[Any, ...]]:
    """Every decision of the test rounds and a table, through both ``decide_and_fold`` and decide + evolve."""
    out: list[tuple[Any, ...]] = []
    for profile, n in ROUNDS:
        played = _played(profile, n)
        state = _opened(profile, n)
        for command in played.commands[1:]:
            events, after = decide_and_fold(state, command)
            again = decide(state, command)
            folded = state
            for event in again:
                folded = evolve(folded, event)
            out.append((events, after, again, folded))
            state = after
    tstate = TableState()
    for tcommand in _table_script():
        tevents, tafter = decide_and_fold_table(tstate, tcommand)
        out.append((tevents, tafter, decide_table(tstate, tcommand)))
        tstate = tafter
    return out


def test_concurrent_decisions_give_what_sequential_ones_give() -> None:
    sequential = _everything()
    threads = 4
    barrier = threading.Barrier(threads)
    results: list[list[tuple[Any, ...]] | BaseException] = [[] for _ in range(threads)]

    def work(slot: int) -> None:
        try:
            barrier.wait()
            results[slot] = _everything()
        except BaseException as error:  # reported below
            results[slot] = error

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    for result in results:
        assert not isinstance(result, BaseException), result
        assert result == sequential
    for events, after, again, folded in (r for r in sequential if len(r) == 4):
        assert events == again and after == folded


# --- the table machine has the round machine's shape ---------------------------------------


def test_the_table_decision_is_the_replay_of_its_events() -> None:
    state = TableState()
    history: list[table_events.TableEvent] = []
    for command in _table_script():
        decision = decide_and_fold_table(state, command)
        assert type(decision) is TableDecision and TableDecision._fields == ("events", "state")
        assert decision.events == decide_table(state, command)
        folded = state
        for event in decision.events:
            folded = evolve_table(folded, event)
        assert decision.state == folded == replay_table(decision.events, state)
        history.extend(decision.events)
        state = decision.state
    assert replay_table(history) == state
    assert state.checkpointed_to == 1 and state.round_id is None


# every name the repository imports from pokdeng_core.table (tests, bench and the service)
TABLE_NAMES = [
    *("MAX_SEATS", "MAX_TURN_TIMEOUT", "MAX_ID", "TABLE_EVENT_BY_KIND", "TABLE_EVENT_TYPES", "TableEvent"),
    *("TableOpened", "PlayerSeated", "PlayerLeft", "BankerBidPlaced", "BankerAssigned", "BankerRoleEnded"),
    *("BankerBidLapsed", "BankerDisconnected", "RoundStarted", "RoundFinished", "CheckpointRecorded"),
    *("OpenTable", "TakeSeat", "LeaveSeat", "BidForBanker", "CloseBankerBid", "StartRound", "FinishRound"),
    *("DisconnectBanker", "RecordCheckpoint", "TableCommand", "TableState", "decide_table", "evolve_table"),
    "winning_bid",
]


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_the_table_module_still_offers_every_name(name: str) -> None:
    assert name in table.__all__
    value = getattr(table, name)
    for home in (table_events, table_commands, limits):
        if hasattr(home, name):
            assert getattr(home, name) is value


def test_events_and_commands_live_in_their_own_modules() -> None:
    assert table.TableOpened.__module__ == "pokdeng_core.table_events"
    assert table.OpenTable.__module__ == "pokdeng_core.table_commands"
    assert table.TableState.__module__ == "pokdeng_core.table_state"
    assert machine.RoundState.__module__ == "pokdeng_core.round_state"


# --- no module-level mutable state ---------------------------------------------------------

MUTABLE = (dict, list, set, bytearray)
# The only exception, and why: tests/service/test_audit.py registers a newer profile version with
# ``monkeypatch.setitem(profiles.PRESETS, ...)``, which needs a mutable mapping. The engine never
# changes it, and every value in it is read-only.
ALLOWED = {("pokdeng_core.profiles", "PRESETS")}


def _mutable_inside(value: object) -> bool:
    """A read-only container holding a mutable one (one level down)."""
    if isinstance(value, MappingProxyType):
        items: list[object] = [*value.keys(), *value.values()]
    elif isinstance(value, tuple | frozenset):
        items = list(value)
    else:
        return False
    return any(isinstance(item, MUTABLE) for item in items)


def test_the_core_has_no_module_level_mutable_containers() -> None:
    found = []
    for module in _core_modules():
        for name, value in vars(module).items():
            if name.startswith("__") and name.endswith("__"):
                continue  # the interpreter's own (__builtins__, __annotations__ ...)
            if (module.__name__, name) in ALLOWED:
                assert all(isinstance(v, MappingProxyType) for v in value.values())
                continue
            if isinstance(value, MUTABLE) or _mutable_inside(value):
                found.append(f"{module.__name__}.{name}: {type(value).__name__}")
    assert not found, found


def test_the_core_never_rebinds_a_global() -> None:
    for path in CORE.glob("*.py"):
        assert not re.search(r"^\s*global\s", path.read_text(encoding="utf-8"), re.MULTILINE), path.name


def test_event_kinds_are_written_once_and_looked_up_read_only() -> None:
    sources = "\n".join(p.read_text(encoding="utf-8") for p in sorted(CORE.glob("*.py")))
    round_classes: tuple[type[e.RoundEvent], ...] = (*e.EVENT_TYPES, e.RoundEvent)
    table_classes: tuple[type[table_events.TableEvent], ...] = (
        *table_events.TABLE_EVENT_TYPES,
        table_events.TableEvent,
    )
    kinds = [cls.kind for cls in round_classes] + [cls.kind for cls in table_classes]
    for kind in kinds:
        assert len(re.findall(rf"[\"']{re.escape(kind)}[\"']", sources)) == 1, kind
    for by_kind, types in (
        (e.EVENT_BY_KIND, e.EVENT_TYPES),
        (table_events.TABLE_EVENT_BY_KIND, table_events.TABLE_EVENT_TYPES),
    ):
        assert isinstance(by_kind, MappingProxyType)
        assert dict(by_kind) == {cls.kind: cls for cls in types}
        with pytest.raises(TypeError):
            by_kind["forged"] = e.RoundEvent  # type: ignore[index]


# --- limits in one place -------------------------------------------------------------------


def test_the_limits_are_the_limits_module_s() -> None:
    assert table.MAX_SEATS is limits.MAX_SEATS == 16
    assert table.MAX_TURN_TIMEOUT is limits.MAX_TURN_TIMEOUT
    assert table.MAX_ID is limits.MAX_ID
    assert machine.MAX_CLIENT_SEED is limits.MAX_CLIENT_SEED
    assert shuffle.CLIENT_SEED_MAX_CHARS == limits.MAX_CLIENT_SEED
    assert table_commands.OpenTable("t", CLASSIC_V1, 1, 2, 3).turn_timeout == limits.DEFAULT_TURN_TIMEOUT


BAD_IDS = {
    "next line U+0085": "ab\u0085c",
    "zero width space U+200B": "ab\u200bc",
    "right-to-left override U+202E": "ab\u202ec",
    "full-width letter": "\uff41bc",  # a full-width "a"
}


def _refused(decide_it: Callable[[], object], field: str) -> InvalidCommand:
    with pytest.raises(InvalidCommand) as info:
        decide_it()
    assert info.value.field == field
    return info.value


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_look_alike_and_invisible_ids_are_refused_by_the_table(bad: str) -> None:
    _refused(lambda: decide_table(TableState(), OpenTable(bad, ROOM_V1, 10, 100, 5)), "table_id")
    _refused(lambda: decide_table(TableState(), OpenTable("t", CLASSIC_V1, 10, 100, 5, dealer=bad)), "dealer")
    opened = decide_and_fold_table(TableState(), OpenTable("t", ROOM_V1, 10, 100, 5)).state
    _refused(lambda: decide_table(opened, TakeSeat(bad, 1)), "player")
    assert limits.id_problem(bad, "player") is not None


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_look_alike_and_invisible_ids_are_refused_by_the_round(bad: str) -> None:
    def opening(**changes: Any) -> c.OpenRound:
        fields: dict[str, Any] = {
            "round_id": "r1",
            "table_id": "t1",
            "round_no": 1,
            "profile": CLASSIC_V1,
            "seats": ((1, "p1"),),
            "banker_player": None,
            "min_stake": 10,
            "max_stake": 100,
            "commitment": commitment(bytes(32)),
            "client_seed": "",
            "nonce": 0,
            "algorithm": SHUFFLE_ALGORITHM,
        }
        return c.OpenRound(**{**fields, **changes})

    _refused(lambda: decide(RoundState(), opening(round_id=bad)), "round_id")
    _refused(lambda: decide(RoundState(), opening(table_id=bad)), "round_id")
    _refused(lambda: decide(RoundState(), opening(seats=((1, bad),))), "seats")
    _refused(lambda: decide(RoundState(), opening(banker_player=bad)), "banker_player")
    ante = open_round("ante").state
    _refused(lambda: decide(ante, c.PlaceBet(1, bad, 100, 10**9)), "player")
    fine = attach_shoe(decide_and_fold(RoundState(), opening()).state, bytes(32))
    assert fine.round_id == "r1"


@pytest.mark.parametrize(("profile", "most"), [(CLASSIC_V1, 16), (ROOM_V1, 5)])
def test_the_seat_count_refusal_names_the_limit_it_checks(profile: Any, most: int) -> None:
    for seats in (0, most + 1, limits.MAX_SEATS + 1, 99):
        error = _refused(partial(decide_table, TableState(), OpenTable("t", profile, 10, 100, seats)), "seats")
        assert error.message == f"{profile.name} allows 1 to {most} seats"


@pytest.mark.parametrize("bad", ["\u202eevig", "a\nb", "zero\u200bwidth", "nul\x00"])
def test_shown_text_refuses_control_and_invisible_characters(bad: str) -> None:
    """Found from the outside: a void's reason with a bidi override (U+202E) reordered what the pages show."""
    from pokdeng_core import limits

    problem = limits.text_problem(bad, "reason", most=500, required=True, shown=True)
    assert problem is not None and "control or invisible" in problem
    assert limits.text_problem(bad, "client_seed", most=256, required=False) is None  # a seed is any text
    assert limits.text_problem("ไพ่ตกพื้น · 7♥ ✓", "reason", most=500, required=True, shown=True) is None
