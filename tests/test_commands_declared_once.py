"""Every place that must know a round command knows each one: this fails, naming the place, when one is missed.

A round command's type is declared once, in ``pokdeng_core/commands.py`` (its name is its type's in snake
case), and its handler once, in the machine's table (``machine._STEPS``: how it is decided and when it is
legal). What is derived from them is checked here against what cannot be: for each core round command,

* the machine decides it (``machine.COMMANDS``) and ``legal_commands`` may list it
  (``machine.LISTED_COMMANDS``), the opening aside (the table's ``StartRound`` opens a round);
* the proto's ``CommandKind`` has its value, ``COMMAND_KIND_<NAME>``, and no value names anything else
  (``api.convert.COMMAND_TO_PB`` is built from the listed commands);
* the service has a command type of the same name (``application/round_commands.py``, in
  ``commands.COMMANDS``; the opening's is ``StartRound``), a handler registered with the pipeline
  (``application.pipeline.HANDLERS``) and an RPC that makes that command (``api.methods.RPCS``);
* the replay reads it back from the event it records first (``pokdeng_core.decisions.DECISIONS``). Which
  event that is, is found by playing rounds through the machine, every command in every phase it fits:
  the command read back from the recorded events, decided again in the same state, gives those events.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core import commands as c
from pokdeng_core import events as e
from pokdeng_core import machine
from pokdeng_core.decisions import DECISIONS, decision_of
from pokdeng_core.machine import decide
from pokdeng_core.profiles import PROFILE_NAMES, BankerKind, get_profile
from pokdeng_core.round_state import Phase, RoundState
from pokdeng_core.shuffle import CLIENT_SEED_RULE
from pokdeng_service.api import convert, methods
from pokdeng_service.application import commands as app_commands
from pokdeng_service.application import handlers  # noqa: F401  (registers every handler)
from pokdeng_service.application.commanding import Command
from pokdeng_service.application.pipeline import HANDLERS
from pokdeng_service.store.codec import to_data

from .core.rounds import every_legal, open_round, random_command

PROTO = Path(__file__).resolve().parents[1] / "proto" / "pokdeng" / "v1" / "pokdeng.proto"
OPENED_BY = {c.OpenRound.name: app_commands.StartRound}
"""The service command that makes a core command of another name: a round is opened by its table's StartRound."""

CORE_COMMANDS = sorted(
    (k for k in vars(c).values() if isinstance(k, type) and issubclass(k, c.RoundCommand) and k is not c.RoundCommand),
    key=lambda k: k.__name__,
)


def test_the_machine_decides_every_round_command() -> None:
    assert set(machine.COMMANDS) == set(CORE_COMMANDS), "give each command its step in machine._STEPS"
    assert len({k.name for k in CORE_COMMANDS}) == len(CORE_COMMANDS)


def test_legal_commands_may_list_every_command_but_the_opening() -> None:
    assert set(machine.LISTED_COMMANDS) == {k.name for k in CORE_COMMANDS} - {c.OpenRound.name}
    assert len(machine.LISTED_COMMANDS) == len(set(machine.LISTED_COMMANDS))


def test_the_proto_has_a_command_kind_for_each_listed_command() -> None:
    enum = re.search(r"^enum CommandKind \{(.*?)^\}", PROTO.read_text(encoding="utf-8"), re.S | re.M)
    assert enum is not None, f"{PROTO} declares enum CommandKind"
    declared = set(re.findall(r"^\s*(COMMAND_KIND_\w+)\s*=\s*\d+;", enum.group(1), re.M))
    wanted = {f"COMMAND_KIND_{name.upper()}" for name in machine.LISTED_COMMANDS} | {"COMMAND_KIND_UNSPECIFIED"}
    assert declared == wanted, "add (or remove) the CommandKind value in the proto, then regenerate"
    assert set(pb.CommandKind.keys()) == wanted, "regenerate the code: python -m pokdeng_service.api.generate"
    assert list(convert.COMMAND_TO_PB) == list(machine.LISTED_COMMANDS)
    assert {pb.CommandKind.Name(v) for v in convert.COMMAND_TO_PB.values()} == wanted - {"COMMAND_KIND_UNSPECIFIED"}


class _Made(Exception):
    def __init__(self, command: Command) -> None:
        super().__init__(command)
        self.command = command


def _made_by(rpc: Any) -> Command:
    """The application command an RPC's body makes of an empty request (the application is a stand-in)."""

    def handle(_principal: object, _request_id: str, command: Command) -> None:
        raise _Made(command)

    method = pb.DESCRIPTOR.services_by_name[rpc.service].methods_by_name[rpc.method]
    request = getattr(pb, method.input_type.name)()
    env = SimpleNamespace(service=SimpleNamespace(handle=handle))
    with pytest.raises(_Made) as made:
        rpc.body(env, SimpleNamespace(principal=None), request)
    return made.value.command


@pytest.mark.parametrize("core", CORE_COMMANDS, ids=lambda k: k.__name__)
def test_the_service_has_a_command_a_handler_and_an_rpc_for_each(core: type[c.RoundCommand]) -> None:
    by_name = {kind.name: kind for kind in app_commands.COMMANDS}
    service = OPENED_BY.get(core.name) or by_name.get(core.name)
    assert service is not None, f"no service command {core.__name__} in application/round_commands.py (or COMMANDS)"
    assert service in HANDLERS, f"no @handler({service.__name__}) in application/rounds.py"
    rpcs = [rpc for rpc in methods.RPCS if rpc.method == service.__name__]
    assert len(rpcs) == 1, f"declare one RPC {service.__name__} in api/rounds.py (and the proto)"
    assert type(_made_by(rpcs[0])) is service


def test_every_round_command_of_the_service_is_one_of_the_core() -> None:
    core_names = {k.name for k in CORE_COMMANDS} | {kind.name for kind in OPENED_BY.values()}
    service = {kind.name for kind in app_commands.COMMANDS if kind.stream == "round"}
    assert service <= core_names


# --- the replay reads back what each command records first -----------------------------------------


class _Fact(NamedTuple):
    """An event as the record holds it (``store.facts.Recorded``: its payload as JSON gives it back)."""

    position: int
    kind: str
    data: dict[str, Any]


def _facts(events: tuple[e.RoundEvent, ...]) -> list[_Fact]:
    return [_Fact(i, event.kind, json.loads(json.dumps(to_data(event)))) for i, event in enumerate(events, start=2)]


def _bankers(profile: str) -> tuple[str | None, ...]:
    kinds = get_profile(profile).banker
    return (*((None,) if BankerKind.HOUSE in kinds else ()), *(("bank",) if BankerKind.PLAYER in kinds else ()))


def _decisions() -> list[tuple[RoundState, c.RoundCommand, tuple[e.RoundEvent, ...]]]:
    """Rounds of every profile, banker and client seed rule, each command chosen among those listed, one not
    played yet first: (the state decided on, the command, its events) of every decision."""
    rnd = random.Random(20260501)
    played_names: set[str] = set()
    out = []
    for n in range(6):
        for profile in PROFILE_NAMES:
            for banker in _bankers(profile):
                for rule in ("", CLIENT_SEED_RULE):
                    seed = bytes([n + 1]) * 32
                    played = open_round(profile, banker=banker, server_seed=seed, client_seed_rule=rule)
                    out.append((RoundState(), played.commands[0], played.produced[0]))
                    for _step in range(200):
                        state = played.state
                        if state.is_closed:
                            break
                        listed = every_legal(state)
                        if state.phase is Phase.BETTING and len(state.bets) >= 4:
                            listed = [x for x in listed if x[1] != c.PlaceBet.name] or listed
                        fresh = [x for x in listed if x[1] not in played_names]
                        common = [x for x in listed if x[1] != c.VoidRound.name] or listed
                        seat, name = rnd.choice(fresh if fresh and rnd.random() < 0.5 else common)
                        played_names.add(name)
                        command = random_command(rnd, state, name, seat)
                        out.append((state, command, played.do(command)))
    return out


DECIDED = _decisions()


def test_every_command_was_played() -> None:
    played = {type(command) for _state, command, _events in DECIDED}
    assert played == set(machine.COMMANDS), f"no round played {set(machine.COMMANDS) - played}: add one above"


def test_the_replay_reads_each_command_back_from_what_it_records_first() -> None:
    first: dict[str, set[str]] = defaultdict(set)
    for state, command, events in DECIDED:
        kind = events[0].kind
        first[type(command).__name__].add(kind)
        assert kind in DECISIONS, f"{type(command).__name__} records {kind} first: give it a reader in DECISIONS"
        again = decision_of(_facts(events), state)
        assert decide(state, again) == events, f"{command} read back as {again}"
    assert first["TimeOutTurn"] == {e.TurnTimedOut.kind, e.SideBetsSettled.kind}  # (in the side bets: a close)
    assert first["Deal"] == {e.CardsDealt.kind, e.ClientSeedFixed.kind}  # (with contributions: the seed first)


def test_every_reader_reads_an_event_kind() -> None:
    assert set(DECISIONS) <= set(e.EVENT_BY_KIND)
