"""The pure replay of a round from its record: decisions read back, chain, replay and money checks.

Replay works on the record alone: the decisions are read back from the stored
events (the first event each command caused says what the command was: the core's
``decisions.decision_of``), the shoe is rebuilt from the revealed server seed
(checked against the commitment), and the pure core decides again. Every replayed event must equal the stored one
(kind and payload; times are not compared), and so must the money.

In a round with contributions (``contributions_opened``, engines from 1.1.0) the client
seed is not in the opening: the contributions are decisions like any other, the deal's
``client_seed_fixed`` is replayed (so its derived seed and the contributions it lists must
be the core's), the cards come from the server seed and that derived seed, and
``check_client_seed`` checks the order of it all: the commitment before every contribution,
the fixed seed before the first card, and the derivation. Older rounds carry their client
seed in ``shuffle_committed`` and replay exactly as they were recorded.

Everything here takes recorded events (``store.facts.Recorded``) and reads no store.
"""

from __future__ import annotations

import json
import re as regex
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.currencies import currency_of
from pokdeng_core.decisions import decision_of as decision_of  # (re-exported: its old home)
from pokdeng_core.errors import DomainError
from pokdeng_core.machine import decide_and_fold
from pokdeng_core.round_evolve import evolve
from pokdeng_core.round_state import RoundState, attach_shoe
from pokdeng_core.shuffle import CLIENT_SEED_RULE, ShuffleError, commitment, derive_client_seed
from pokdeng_service.audit.forms import currency_ok, sender_ok, version_ok
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.money import format_money
from pokdeng_service.store.codec import canonical_json, chain_digest, from_data, genesis_digest, to_data
from pokdeng_service.store.facts import Recorded

# ---------------------------------------------------------------------------------------
# reading decisions back from the record


def core_facts(events: Iterable[Recorded]) -> list[Recorded]:
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


def decisions(events: Iterable[Recorded]) -> list[rc.RoundCommand]:
    """Every command of a recorded round, in order."""
    out = []
    state = RoundState()
    for group in group_by_command(core_facts(events)):
        out.append(decision_of(group, state))
        for event in group:
            state = evolve(state, _core(event))
    return out


def revealed_seed(events: Iterable[Recorded]) -> bytes | None:
    for event in events:
        if event.kind == re.SeedRevealed.kind:
            return bytes.fromhex(event.data["server_seed"])
    return None


def recorded_client_seed(events: Iterable[Recorded]) -> str | None:
    """The client seed the round's shuffle used, as its record says: the deal's ``client_seed_fixed``
    in a round with contributions (None before, or if it was voided before its deal), else the one
    recorded with the commitment."""
    committed: str | None = None
    contributions = False
    for event in events:
        if event.kind == re.ContributionsOpened.kind:
            contributions = True
        elif event.kind == re.ShuffleCommitted.kind and committed is None:
            committed = event.data["client_seed"]
        elif event.kind == re.ClientSeedFixed.kind:
            return str(event.data["client_seed"])
    return None if contributions else committed


# ---------------------------------------------------------------------------------------
# checks


def _creation(event: Recorded, first_position: int) -> bool:
    """The stream's own creation (the aggregate's ``Started`` at position 1): before the chain, no digest."""
    return event.position < first_position and not event.digest and event.kind not in re.EVENT_BY_KIND


def check_chain(verdict: Verdict, stream: str, events: Sequence[Recorded], first_position: int = 2) -> str:
    """Recompute the hash chain; returns the last digest. Detects edited, deleted, inserted or reordered events."""
    previous = genesis_digest(stream)
    expected_position = first_position
    chained = [e for e in events if not _creation(e, first_position)]
    for event in chained:  # every event but the stream's creation: none is passed over
        if event.position != expected_position:
            verdict.add("chain", False, f"position {event.position} where {expected_position} was expected")
            return previous
        digest = chain_digest(previous, event.kind, event.data, event.position, event.command_id, event.timestamp)
        if digest != event.digest:
            verdict.add("chain", False, f"event {event.position} ({event.kind}) does not match its digest")
            return previous
        previous = digest
        expected_position += 1
    unknown = sorted({e.kind for e in chained if e.kind not in re.EVENT_BY_KIND})
    if unknown:  # linked, but not replayed, restated or counted: nothing could vouch for them
        verdict.add("chain", False, f"events of kinds this verifier does not know: {', '.join(unknown)}")
        return previous
    verdict.add("chain", True, f"{expected_position - first_position} events linked")
    return previous


def replay_events(
    events: Sequence[Recorded], server_seed: bytes | None = None
) -> tuple[list[re.RoundEvent], RoundState]:
    """Decide the round again from its decisions and seed; returns the replayed events and final state."""
    seed = server_seed if server_seed is not None else revealed_seed(events)
    state = RoundState()
    replayed: list[re.RoundEvent] = []
    for group in group_by_command(core_facts(events)):
        command = decision_of(group, state)
        produced, state = decide_and_fold(state, command)
        replayed.extend(produced)
        if isinstance(command, rc.OpenRound) and seed is not None:
            state = attach_shoe(state, seed)
    return replayed, state


_STORED_TIME = regex.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00")  # docs/audit.md, "timestamp"
_SENT_BY_OPERATOR = frozenset(
    k.kind for k in (re.RoundOpened, re.CardsDealt, re.SideBetsSettled, re.TurnTimedOut, re.RoundVoided)
)


def stored_time(text: object) -> bool:
    """Whether ``text`` is a time as the record stores it: ``datetime.isoformat()`` of a UTC time, so a
    time that exists, six digits of microseconds or none at a whole second (never ``.000000``)."""
    if not isinstance(text, str) or not _STORED_TIME.fullmatch(text):
        return False
    try:
        return datetime.fromisoformat(text).isoformat() == text
    except ValueError:  # a date or time that does not exist
        return False


def record_problem(facts: Sequence[Recorded]) -> str | None:
    """What breaks the record's documented form, beyond its chain (docs/audit.md, "The record"; docs/events.md),
    or None: every time as stored (``stored_time``), the engine version and the currency of their grammars, every
    sender (``by``) of its grammar and named where the docs say it is (``sender_problem``), the round id
    ``<table id>#<round number>``, and the shuffle's nonce the round's number."""
    opened = next((f for f in facts if f.kind == re.RoundOpened.kind), None)
    for fact in facts:
        if not stored_time(fact.timestamp):
            return f"event {fact.position}: time {fact.timestamp!r} is not in the stored form"
    if opened is not None:
        if not version_ok(opened.data.get("engine_version")):
            return f"event {opened.position}: engine version {opened.data.get('engine_version')!r} is not N.N.N"
        if "currency" in opened.data and not currency_ok(opened.data["currency"]):
            return f"event {opened.position}: currency {opened.data['currency']!r} is not three capital letters"
    problem = sender_problem(facts, opened.data.get("banker_player") if opened is not None else None)
    if problem is not None:
        return problem
    committed = next((f for f in facts if f.kind == re.ShuffleCommitted.kind), None)
    if (
        opened is not None
        and opened.data.get("round_id") != f"{opened.data.get('table_id')}#{opened.data.get('round_no')}"
    ):
        return f"event {opened.position}: the round id is not <table id>#<round number>"
    if opened is not None and committed is not None and committed.data.get("nonce") != opened.data.get("round_no"):
        return f"event {committed.position}: nonce {committed.data.get('nonce')!r} is not the round's number"
    return None


def sender_problem(facts: Sequence[Recorded], banker: object) -> str | None:
    """Who sent what (docs/events.md, "Who sent a command"), or what breaks it. Of each event's ``by`` that is
    present (a record made before senders were named has none): it is a sender (``forms.sender_ok``); an
    event that is not its command's first (the events that follow from a command share its sender) has ``""``;
    so do draws and stays of reason ``auto`` or ``timeout`` and the showdown (``hands_revealed`` not
    selective); the operator-only commands' events (``round_opened``, ``cards_dealt``, ``side_bets_settled``,
    ``turn_timed_out``, ``round_voided``), the platform's ``ContributeSeed`` (``contributor`` ``""``) and the
    choices made for the house's hand (a ``card_drawn`` or ``player_stood`` of reason ``choice`` at seat 0,
    a selective ``hands_revealed``, when ``banker_player`` is null) never have ``""``."""
    for group in group_by_command(facts):
        for index, fact in enumerate(group):
            if "by" not in fact.data:
                continue
            by, data, where = fact.data["by"], fact.data, f"event {fact.position} ({fact.kind})"
            if not sender_ok(by):
                return f"{where}: sender {by!r} is not '', operator, operator:NAME or service:NAME"
            automatic = index > 0 or data.get("reason") in ("auto", "timeout") or data.get("selective") is False
            if automatic and fact.kind not in _SENT_BY_OPERATOR:
                if by != "":
                    return f"{where}: sender {by!r} on an automatic event (its command's sender is its first event's)"
                continue
            named = fact.kind in _SENT_BY_OPERATOR or (
                fact.kind == re.ClientSeedContributed.kind and data.get("contributor") == ""
            )
            house = banker is None and (
                (fact.kind in (re.CardDrawn.kind, re.PlayerStood.kind) and data.get("seat") == 0)
                or fact.kind == re.HandsRevealed.kind
            )
            if by == "" and (named or house):
                what = "the house's hand" if house and not named else "an operator's command"
                return f"{where}: {what} names its sender (by)"
    return None


def check_replay(verdict: Verdict, events: Sequence[Recorded], server_seed: bytes | None = None) -> RoundState:
    facts = core_facts(events)
    problem = record_problem(facts)
    verdict.add(
        "record",
        problem is None,
        problem
        or "times as stored, senders of their grammar and named as documented, the engine version and the "
        "currency of theirs, the nonce the round's number",
    )
    seed = server_seed if server_seed is not None else revealed_seed(events)
    if seed is None and voided_without_seed(facts):
        verdict.add("seed", True, "withheld: the round was voided without revealing its server seed")
        verdict.warn("its cards are not checked: the seed of this voided round was never revealed (a lost vault key)")
        check_client_seed(verdict, facts)
        state = RoundState()
        for fact in facts:  # the record as stored (nothing to decide again without the cards)
            state = evolve(state, _core(fact))
        return state
    if seed is None:
        verdict.add("seed", False, "the server seed is not revealed yet (the round is open)")
    else:
        committed = next((e.data["commitment"] for e in facts if e.kind == re.ShuffleCommitted.kind), "")
        verdict.add("commitment", commitment(seed) == committed, "SHA-256 of the server seed equals the commitment")
    check_client_seed(verdict, facts)
    try:
        replayed, state = replay_events(facts, seed)
    except (DomainError, ValueError, AssertionError, KeyError, TypeError) as error:
        verdict.add("replay", False, f"the recorded decisions cannot be replayed: {error}")
        return RoundState()
    if _same_round(facts, replayed):
        verdict.add("replay", True, f"{len(replayed)} events replayed identically")
        return state
    for stored, again in zip(facts, replayed, strict=False):
        if isinstance(again, re.RoundOpened) and stored.kind == again.kind:
            again = _as_recorded_engine(verdict, stored, again)
        if stored.kind != again.kind or not _same_data(stored.data, again):
            verdict.add(
                "replay",
                False,
                f"event {stored.position}: stored {stored.kind} {canonical_json(stored.data)}, "
                f"replayed {again.kind} {canonical_json(as_json(to_data(again)))}",
            )
            return state
    if len(facts) != len(replayed):
        verdict.add("replay", False, f"{len(facts)} events stored, {len(replayed)} replayed")
        return state
    verdict.add("replay", True, f"{len(replayed)} events replayed identically")
    return state


def voided_without_seed(facts: Sequence[Recorded]) -> bool:
    """A round closed as voided with no ``seed_revealed``: voided when its seed could not be unsealed."""
    if not facts or facts[-1].kind != re.RoundClosed.kind or facts[-1].data.get("outcome") != "voided":
        return False
    return all(fact.kind != re.SeedRevealed.kind for fact in facts)


def check_client_seed(verdict: Verdict, events: Sequence[Recorded]) -> None:
    """Where the shuffle's client seed came from, and that it came in the right order.

    A round with contributions: ``shuffle_committed`` precedes every ``client_seed_contributed``;
    ``client_seed_fixed`` (at most one) follows the commitment and precedes the first card and any
    later contribution; it lists each contributor's last contribution before it, sorted, and its
    client seed is their derivation under its rule (docs/shuffle.md section 13). A round without
    (engines before 1.1.0) took its client seed with the commitment, before any card."""
    facts = core_facts(events)
    kinds = [e.kind for e in facts]
    committed = kinds.index(re.ShuffleCommitted.kind) if re.ShuffleCommitted.kind in kinds else None
    first_card = next((i for i, k in enumerate(kinds) if k in (re.CardsDealt.kind, re.CardDrawn.kind)), len(kinds))
    if re.ContributionsOpened.kind not in kinds:
        given = [e for e in facts if e.kind in (re.ClientSeedContributed.kind, re.ClientSeedFixed.kind)]
        ok = committed is not None and committed < first_card and not given
        where = f"event {given[0].position} ({given[0].kind})" if given else "no commitment before the first card"
        seed = facts[committed].data.get("client_seed") if committed is not None else None
        detail = f"given with the commitment ({seed!r}; a round without contributions)" if ok else where
        verdict.add("client seed", ok, detail)
        return
    problem = _contributions_problem(facts, committed, first_card)
    fixed = next((e for e in facts if e.kind == re.ClientSeedFixed.kind), None)
    if problem is not None:
        verdict.add("client seed", False, problem)
    elif fixed is None:
        count = sum(1 for e in facts if e.kind == re.ClientSeedContributed.kind)
        verdict.add("client seed", True, f"never fixed: no deal ({count} contribution(s) after the commitment)")
    else:
        data = fixed.data
        verdict.add(
            "client seed",
            True,
            f"{data['client_seed']} derived at event {fixed.position} by {data['rule']} from "
            f"{len(data['contributions'])} contribution(s), all after the commitment, before the first card",
        )


def _contributions_problem(facts: Sequence[Recorded], committed: int | None, first_card: int) -> str | None:
    opened = [e for e in facts if e.kind == re.ContributionsOpened.kind]
    if committed is None:
        return "no shuffle_committed"
    if len(opened) != 1 or facts.index(opened[0]) > committed:
        return "contributions_opened must come once, with the opening, before the commitment"
    rule = opened[0].data.get("rule")
    latest: dict[str, str] = {}
    fixed: Recorded | None = None
    for index, event in enumerate(facts):
        if event.kind == re.ClientSeedContributed.kind:
            if index < committed:
                return f"event {event.position}: a contribution before the commitment"
            if fixed is not None:
                return f"event {event.position}: a contribution after the client seed was fixed"
            latest[event.data["contributor"]] = event.data["client_seed"]
        elif event.kind == re.ClientSeedFixed.kind:
            if fixed is not None:
                return f"event {event.position}: the client seed is fixed twice"
            if index < committed or index > first_card:
                return f"event {event.position}: the client seed must be fixed after the commitment, before any card"
            fixed = event
    if fixed is None:
        return "cards were dealt, but no client seed was fixed" if first_card < len(facts) else None
    data = fixed.data
    if data.get("rule") != rule or rule != CLIENT_SEED_RULE:
        return f"event {fixed.position}: rule {data.get('rule')!r} (the round opened under {rule!r})"
    used = [tuple(pair) for pair in data["contributions"]]
    expected = sorted(latest.items(), key=lambda pair: pair[0].encode("utf-8", "surrogatepass"))
    if used != expected:
        return f"event {fixed.position}: it lists {used}, the last contributions were {expected}"
    try:
        derived = derive_client_seed(expected)
    except ShuffleError as error:
        return f"event {fixed.position}: the contributions cannot be derived: {error}"
    if data["client_seed"] != derived:
        return f"event {fixed.position}: client seed {data['client_seed']}, the derivation gives {derived}"
    return None


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


def _same_round(facts: Sequence[Recorded], replayed: Sequence[re.RoundEvent]) -> bool:
    """Every stored event is its replayed one (kind, and payload by ``_same_data``'s JSON form), all
    compared at once: the JSON of the stored payloads' list against that of the replayed events'
    (a JSON array's bytes are equal only if each element's are). False is no verdict: the events
    are then compared one by one (an opening by another engine version, keys in another order)."""
    if len(facts) != len(replayed) or any(f.kind != e.kind for f, e in zip(facts, replayed, strict=True)):
        return False
    try:
        return orjson.dumps([f.data for f in facts]) == orjson.dumps(replayed)
    except TypeError:
        return False


def _same_data(stored: dict[str, Any], event: re.RoundEvent) -> bool:
    """``stored == as_json(to_data(event))``: the stored payload equals the event's as JSON gives it back.

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
    if stored == data or stored == as_json(data):
        return True
    # a field added with a default (``events.ADDED_FIELDS``) that a record made before it lacks
    added = re.ADDED_FIELDS.get(event.kind, {})
    absent = {k for k, default in added.items() if k not in stored and data.get(k) == default}
    if not absent:
        return False
    trimmed = {k: v for k, v in data.items() if k not in absent}
    return stored == trimmed or stored == as_json(trimmed)


def as_json(value: Any) -> Any:
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
    opened = next((e.data for e in events if e.kind == re.RoundOpened.kind), {})
    currency = currency_of(opened)  # (the amounts as a person reads them: pokdeng_service.money)

    def money(amount: int) -> str:
        return format_money(amount, currency)

    verdict.add(
        "money",
        total == 0 and consistent,
        f"wallets {money(sum(nets.values()))} + house {money(data['house_net'])} + commission "
        f"{money(data['commission'])} = {money(total)}",
    )
    return nets
