"""The pure replay of a round from its record: decisions read back, chain, replay and money checks.

Replay works on the record alone: the decisions are read back from the stored
events (the first event each command caused says what the command was), the
shoe is rebuilt from the revealed server seed (checked against the commitment),
and the pure core decides again. Every replayed event must equal the stored one
(kind and payload; times are not compared), and so must the money.

Everything here takes recorded events (``store.facts.Recorded``) and reads no store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import orjson

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.errors import DomainError
from pokdeng_core.machine import RoundState, attach_shoe, decide_and_fold, evolve
from pokdeng_core.profiles import get_profile
from pokdeng_core.shuffle import commitment
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store.codec import canonical_json, chain_digest, from_data, genesis_digest, to_data
from pokdeng_service.store.facts import Recorded

# ---------------------------------------------------------------------------------------
# reading decisions back from the record


def _facts(events: Iterable[Recorded]) -> list[Recorded]:
    """The round's own (core) events among its stored ones."""
    return [e for e in events if e.kind in re.EVENT_BY_KIND]


def _core(event: Recorded) -> re.RoundEvent:
    return from_data(re.EVENT_BY_KIND[event.kind], event.data)


def group_by_command(facts: Sequence[Recorded]) -> list[list[Recorded]]:
    """Consecutive events caused by one command."""
    groups: list[list[Recorded]] = []
    for event in facts:
        if groups and groups[-1][0].command_id == event.command_id:
            groups[-1].append(event)
        else:
            groups.append([event])
    return groups


def decision_of(group: Sequence[Recorded], state: RoundState) -> rc.RoundCommand:
    """The command that caused ``group``, read from its first event (and the state before it).

    Scalar fields are read from the stored payload as they are; events with arrays (the
    opening, a selective reveal) are decoded into their core classes first."""
    head = group[0]
    kind, data = head.kind, head.data
    banker = state.banker_player
    if kind == re.BetPlaced.kind:
        return rc.PlaceBet(
            data["seat"], data["player"], data["stake"], data["reserved"], data["banker_reserved"] if banker else None
        )
    if kind == re.CardDrawn.kind:
        seat = data["seat"]
        return rc.BankerDraw(banker) if seat == 0 else rc.Draw(seat, state.holder(seat) or "")
    if kind == re.PlayerStood.kind:
        seat = data["seat"]
        return rc.BankerStay(banker) if seat == 0 else rc.Stay(seat, state.holder(seat) or "")
    if kind == re.CardsDealt.kind:
        return rc.Deal()
    if kind == re.SideBetPlaced.kind:
        return rc.PlaceSideBet(data["seat"], data["player"], data["reserved"])
    if kind == re.SideBetsSettled.kind:
        return rc.CloseSideBets()
    if kind == re.TurnTimedOut.kind:
        return rc.TimeOutTurn()
    if kind == re.RoundVoided.kind:
        return rc.VoidRound(data["reason"])
    if kind == re.RoundOpened.kind:
        shuffle = group[1] if len(group) > 1 else None
        if shuffle is None or shuffle.kind != re.ShuffleCommitted.kind:
            raise ValueError(
                f"event {head.position} ({re.RoundOpened.kind}) is not followed by {re.ShuffleCommitted.kind}"
            )
        committed = shuffle.data
        profile = get_profile(data["profile_name"], data["profile_version"], **dict(data["profile_options"]))
        return rc.OpenRound(
            data["round_id"],
            data["table_id"],
            data["round_no"],
            profile,
            tuple((seat, holder) for seat, holder in data["seats"]),
            data["banker_player"],
            data["min_stake"],
            data["max_stake"],
            committed["commitment"],
            committed["client_seed"],
            committed["nonce"],
            committed["algorithm"],
        )
    first = _core(head) if kind in re.EVENT_BY_KIND else None
    if isinstance(first, re.HandsRevealed) and first.selective:
        return rc.BankerReveal(first.seats, banker)
    raise ValueError(f"event {head.position} ({kind}) does not start a command")


def decisions(events: Iterable[Recorded]) -> list[rc.RoundCommand]:
    """Every command of a recorded round, in order."""
    out = []
    state = RoundState()
    for group in group_by_command(_facts(events)):
        out.append(decision_of(group, state))
        for event in group:
            state = evolve(state, _core(event))
    return out


def revealed_seed(events: Iterable[Recorded]) -> bytes | None:
    for event in events:
        if event.kind == re.SeedRevealed.kind:
            return bytes.fromhex(event.data["server_seed"])
    return None


# ---------------------------------------------------------------------------------------
# checks


def check_chain(verdict: Verdict, stream: str, events: Sequence[Recorded], first_position: int = 2) -> str:
    """Recompute the hash chain; returns the last digest. Detects edited, deleted, inserted or reordered events."""
    previous = genesis_digest(stream)
    expected_position = first_position
    for event in events:
        if event.kind not in re.EVENT_BY_KIND and not event.digest:
            continue
        if event.position != expected_position:
            verdict.add("chain", False, f"position {event.position} where {expected_position} was expected")
            return previous
        digest = chain_digest(previous, event.kind, event.data, event.position, event.command_id, event.timestamp)
        if digest != event.digest:
            verdict.add("chain", False, f"event {event.position} ({event.kind}) does not match its digest")
            return previous
        previous = digest
        expected_position += 1
    verdict.add("chain", True, f"{expected_position - first_position} events linked")
    return previous


def replay_events(
    events: Sequence[Recorded], server_seed: bytes | None = None
) -> tuple[list[re.RoundEvent], RoundState]:
    """Decide the round again from its decisions and seed; returns the replayed events and final state."""
    seed = server_seed if server_seed is not None else revealed_seed(events)
    state = RoundState()
    replayed: list[re.RoundEvent] = []
    for group in group_by_command(_facts(events)):
        command = decision_of(group, state)
        produced, state = decide_and_fold(state, command)
        replayed.extend(produced)
        if isinstance(command, rc.OpenRound) and seed is not None:
            state = attach_shoe(state, seed)
    return replayed, state


def check_replay(verdict: Verdict, events: Sequence[Recorded], server_seed: bytes | None = None) -> RoundState:
    facts = _facts(events)
    seed = server_seed if server_seed is not None else revealed_seed(events)
    if seed is None:
        verdict.add("seed", False, "the server seed is not revealed yet (the round is open)")
    else:
        committed = next((e.data["commitment"] for e in facts if e.kind == re.ShuffleCommitted.kind), "")
        verdict.add("commitment", commitment(seed) == committed, "SHA-256 of the server seed equals the commitment")
    try:
        replayed, state = replay_events(facts, seed)
    except (DomainError, ValueError, AssertionError, KeyError, TypeError) as error:
        verdict.add("replay", False, f"the recorded decisions cannot be replayed: {error}")
        return RoundState()
    for stored, again in zip(facts, replayed, strict=False):
        if isinstance(again, re.RoundOpened) and stored.kind == again.kind:
            again = _as_recorded_engine(verdict, stored, again)
        if stored.kind != again.kind or not _same_data(stored.data, again):
            verdict.add(
                "replay",
                False,
                f"event {stored.position}: stored {stored.kind} {canonical_json(stored.data)}, "
                f"replayed {again.kind} {canonical_json(_json(to_data(again)))}",
            )
            return state
    if len(facts) != len(replayed):
        verdict.add("replay", False, f"{len(facts)} events stored, {len(replayed)} replayed")
        return state
    verdict.add("replay", True, f"{len(replayed)} events replayed identically")
    return state


def _as_recorded_engine(verdict: Verdict, stored: Recorded, again: re.RoundOpened) -> re.RoundOpened:
    """A round recorded by another engine version is replayed by this one, under the profile
    version it was played with (rules change only with a new profile version): the opening
    names the engine that decided it, which this engine cannot be. The verdict says so, and
    every other field and event must still match."""
    recorded = stored.data.get("engine_version")
    if not isinstance(recorded, str) or recorded == again.engine_version:
        return again
    verdict.add(
        "engine",
        True,
        f"recorded by engine {recorded}, replayed by engine {again.engine_version} "
        f"under {again.profile_name} v{again.profile_version}",
    )
    return replace(again, engine_version=recorded)


def _same_data(stored: dict[str, Any], event: re.RoundEvent) -> bool:
    """``stored == _json(to_data(event))``: the stored payload equals the event's as JSON gives it back.

    Their JSON forms are compared first: orjson writes a core event's dataclass fields in
    their order, as ``to_data`` holds them, and a stored payload keeps the order it was
    written in. Only when those bytes differ (keys in another order, say) are the values
    compared (a stored payload equal to ``to_data(event)`` equals its JSON form too)."""
    try:
        if orjson.dumps(stored) == orjson.dumps(event):
            return True
    except TypeError:
        pass
    data = to_data(event)
    return stored == data or stored == _json(data)


def _json(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists, say)."""
    result: Any = json.loads(json.dumps(value))
    return result


def check_money(verdict: Verdict, events: Sequence[Recorded]) -> dict[str, int]:
    """The round's settlement balances: wallet nets + house + commission == 0. Returns each wallet's net."""
    settled = [e for e in events if e.kind == re.RoundSettled.kind]
    if not settled:
        voided = any(e.kind == re.RoundVoided.kind for e in events)
        verdict.add("money", voided, "voided: every reservation released" if voided else "the round is not settled")
        return {}
    data = settled[-1].data
    nets = {player: net for player, _reserved, net in data["wallets"]}
    total = sum(nets.values()) + data["house_net"] + data["commission"]
    bets = [e.data for e in events if e.kind == re.BetSettled.kind]
    sides = [r for e in events if e.kind == re.SideBetsSettled.kind for r in e.data["results"]]
    per_wallet: dict[str, int] = {}
    for bet in bets:
        per_wallet[bet["player"]] = per_wallet.get(bet["player"], 0) + bet["net"]
    for _seat, player, _stake, net in sides:
        per_wallet[player] = per_wallet.get(player, 0) + net
    consistent = all(nets.get(p, 0) == n for p, n in per_wallet.items())
    verdict.add(
        "money",
        total == 0 and consistent,
        f"wallets {sum(nets.values())} + house {data['house_net']} + commission {data['commission']} = {total}",
    )
    return nets
