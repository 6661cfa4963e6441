"""Audits: replay a round from its seeds and recorded decisions, check its hash chain, export and verify bundles.

Replay works on the record alone: the decisions are read back from the stored
events (the first event each command caused says what the command was), the
shoe is rebuilt from the revealed server seed (checked against the commitment),
and the pure core decides again. Every replayed event must equal the stored one
(kind and payload; times are not compared), and so must the money.

A *round bundle* (docs/audit.md) is a self-contained JSON document that
``verify_bundle`` checks with no server and no database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core.errors import DomainError
from pokdeng_core.machine import RoundState, attach_shoe, decide_and_fold, evolve
from pokdeng_core.profiles import get_profile
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment, shuffled_deck
from pokdeng_service.application.app import _check_id
from pokdeng_service.application.errors import NotFound
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.audit.table_pins import TablePins, table_finish
from pokdeng_service.store import merkle
from pokdeng_service.store.aggregates import round_uuid, wallet_uuid
from pokdeng_service.store.codec import canonical_json, chain_digest, from_data, genesis_digest, to_data
from pokdeng_service.store.facts import Fact, Recorded, fact_of, facts_of_rows

BUNDLE_FORMAT = "pokdeng-round-bundle"
BUNDLE_VERSION = 1


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Verdict:
    """The outcome of an audit: every check, and the first difference found (if any)."""

    subject: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def first_difference(self) -> str:
        for check in self.checks:
            if not check.ok:
                return f"{check.name}: {check.detail}"
        return ""

    def add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, ok, detail))
        return ok

    def render(self) -> str:
        lines = [f"{'PASS' if self.ok else 'FAIL'}  {self.subject}"]
        for check in self.checks:
            lines.append(f"  {'ok ' if check.ok else 'BAD'}  {check.name}{': ' + check.detail if check.detail else ''}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "ok": self.ok,
            "first_difference": self.first_difference,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
        }


# ---------------------------------------------------------------------------------------
# reading decisions back from the record


def _facts(events: Iterable[Recorded]) -> list[Recorded]:
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
            raise ValueError(f"event {head.position} (round_opened) is not followed by shuffle_committed")
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


# ---------------------------------------------------------------------------------------
# against a live application


def verify_rounds(app: Any, round_ids: Iterable[str], check_wallets: bool = False) -> Iterator[Verdict]:
    """``verify_round`` for each round in turn, sharing one ``TablePins`` over the batch (what
    ``pokdeng verify --all`` does): each table's stream is read forward a page at a time for
    the pins of the rounds being verified, instead of once per round."""
    pins = TablePins(app)
    for round_id in round_ids:
        yield verify_round(app, round_id, check_wallets=check_wallets, pins=pins)


def verify_round(app: Any, round_id: str, check_wallets: bool = False, pins: TablePins | None = None) -> Verdict:
    """Chain, replay, money, and the round as the table (and, if asked, the wallets) recorded it.

    Everything comes from the round's stream, read once: the chain covers every position
    (a gap, an insertion or a reordering breaks it), and the replay rebuilds the state.
    The table's pin of the round's last digest is read afresh too, unless ``pins`` (one
    batch's reader, see ``verify_rounds``) read it ahead earlier in the batch.
    """
    verdict = Verdict(f"round {round_id}")
    events = round_facts(app, round_id)
    last = check_chain(verdict, round_id, events)
    facts = _facts(events)
    opened = next((e for e in facts if e.kind == re.RoundOpened.kind), None)
    if opened is None:
        verdict.add("record", False, "the round's stream has no round_opened event")
        return verdict
    closed = any(e.kind == re.RoundClosed.kind for e in facts)
    seed = None
    if not closed:  # an operator-side check of an open round: the seed is still sealed
        seed = app._shoe(app._round(round_id, with_shoe=False)).server_seed
    check_replay(verdict, events, seed)
    nets = check_money(verdict, events)
    if closed:
        table_id = opened.data["table_id"]
        if pins is None:
            finished = table_finish(app, table_id, round_id, opened.data["round_no"])
        else:
            finished = pins.find(table_id, round_id, opened.data["round_no"])
        pinned = finished is not None and finished.data.get("round_digest") == last
        verdict.add("table record", pinned, f"table {table_id} pins the round's last digest")
        if check_wallets:
            for player, net in nets.items():
                applied = _wallet_settlement(app, player, round_id)
                verdict.add(
                    f"wallet {player}",
                    applied is not None and applied[0] == net,
                    f"wallet applied {applied[0] if applied else 'nothing'}, round says {net}",
                )
    return verdict


def round_facts(app: Any, round_id: str) -> list[Fact]:
    """The round's stored events, read afresh from the store (a cached copy would hide an edit of the rows)."""
    _check_id(round_id, "round_id")
    recorder, mapper = getattr(app, "recorder", None), getattr(app, "mapper", None)
    if recorder is not None and mapper is not None:
        facts = facts_of_rows(mapper, recorder.select_events(round_uuid(round_id)))
    else:
        facts = [fact_of(item) for item in app.events.get(round_uuid(round_id))]
    if not facts:
        raise NotFound(f"round {round_id!r} not found", round=round_id)
    return facts


def _wallet_settlement(app: Any, wallet_id: str, round_id: str) -> tuple[int, int] | None:
    """(net, balance after) of a round as the wallet applied it, or None.

    The wallet's stream is read newest first, a page at a time, so that checking a recent
    round costs the same however long the wallet's history; the balance comes from the
    wallet loaded at that version (snapshots make that flat too).
    """
    uuid = wallet_uuid(wallet_id)
    lte: int | None = None
    while True:
        items = list(app.events.get(uuid, desc=True, lte=lte, limit=200))
        for item in items:
            if type(item).__name__ == "RoundSettled" and item.round_id == round_id:
                balance = app.repository.get(uuid, version=item.originator_version).balance
                return int(item.net), int(balance)
        if len(items) < 200:
            return None
        lte = items[-1].originator_version - 1


# ---------------------------------------------------------------------------------------
# bundles


def export_bundle(app: Any, round_id: str) -> dict[str, Any]:
    """A self-contained record of one closed round (docs/audit.md)."""
    state = app.round_state(round_id)
    if not state.is_closed:
        raise DomainError(f"round {round_id} is still open: bundles are for closed rounds (the seed is secret)")
    events = list(app.round_events(round_id))
    facts = _facts(events)
    seed = revealed_seed(facts)
    profile = state.rules
    deck = shuffled_deck(seed, state.client_seed, state.nonce, profile.decks) if seed else ()
    settled = next((e.data for e in facts if e.kind == re.RoundSettled.kind), None)
    balances = []
    if settled is not None:
        for player, _reserved, net in settled["wallets"]:
            after = _balance_after(app, player, round_id)
            if after is not None:
                balances.append({"wallet": player, "before": after - net, "after": after, "net": net})
    body: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "round_id": round_id,
        "table_id": state.table_id,
        "round_no": state.round_no,
        "profile": {"name": profile.name, "version": profile.version, "options": profile.options},
        "engine_version": facts[0].data.get("engine_version", "") if facts else "",
        "shuffle": {
            "algorithm": SHUFFLE_ALGORITHM,
            "commitment": state.commitment,
            "server_seed": state.server_seed,
            "client_seed": state.client_seed,
            "nonce": state.nonce,
            "decks": profile.decks,
            "deck_order": [str(c) for c in deck],
        },
        "decisions": [_decision_text(c) for c in decisions(events)],
        "payouts": [e.data for e in facts if e.kind == re.BetSettled.kind],
        "settlement": settled,
        "balances": balances,
        "times": {"opened": facts[0].timestamp, "closed": facts[-1].timestamp},
        "events": [_event_dict(e) for e in facts],
        "chain": {"version": "pokdeng-chain-v1", "genesis": genesis_digest(round_id), "last": facts[-1].digest},
        "inclusion": app.inclusion_proof(round_id),
    }
    body["bundle_digest"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return body


def _event_dict(event: Recorded) -> dict[str, Any]:
    return {
        "position": event.position,
        "kind": event.kind,
        "data": event.data,
        "command_id": event.command_id,
        "timestamp": event.timestamp,
        "digest": event.digest,
    }


def _balance_after(app: Any, wallet_id: str, round_id: str) -> int | None:
    applied = _wallet_settlement(app, wallet_id, round_id)
    return None if applied is None else applied[1]


def _decision_text(command: rc.RoundCommand) -> dict[str, Any]:
    fields = {k: getattr(command, k) for k in getattr(command, "__dataclass_fields__", {})}
    if "profile" in fields:
        profile = fields.pop("profile")
        fields["profile"] = profile.key
    return {"command": command.name, **_json({k: v for k, v in fields.items()})}


def bundle_bytes(bundle: dict[str, Any]) -> bytes:
    """The one byte form of a bundle: canonical JSON and a newline."""
    return (canonical_json(bundle) + "\n").encode()


def verify_bundle(raw: bytes) -> Verdict:
    """Check a bundle offline: form, digest, commitment, shuffle, chain, replay and money."""
    verdict = Verdict("bundle")
    try:
        bundle = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        verdict.add("form", False, f"not JSON: {error}")
        return verdict
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        verdict.add("form", False, "not a pokdeng round bundle")
        return verdict
    verdict.subject = f"bundle of round {bundle.get('round_id')}"
    if not verdict.add("form", raw == bundle_bytes(bundle), "canonical JSON, as exported"):
        return verdict
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if not verdict.add("bundle digest", digest == bundle.get("bundle_digest"), "SHA-256 of the bundle body"):
        return verdict
    try:
        events = [RecordedEvent(**e) for e in bundle["events"]]
        shuffle = bundle["shuffle"]
        seed = bytes.fromhex(shuffle["server_seed"])
        verdict.add("commitment", commitment(seed) == shuffle["commitment"], "SHA-256 of the server seed")
        deck = [str(c) for c in shuffled_deck(seed, shuffle["client_seed"], shuffle["nonce"], shuffle["decks"])]
        verdict.add("shuffle", deck == shuffle["deck_order"], f"{len(deck)} cards from {shuffle['algorithm']}")
        last = check_chain(verdict, bundle["round_id"], events)
        verdict.add("chain end", last == bundle["chain"]["last"], "the last digest matches the bundle's")
        check_replay(verdict, events, seed)
        nets = check_money(verdict, events)
        inclusion = bundle.get("inclusion")
        if inclusion is not None:
            leaf = merkle.leaf_hash(bundle["round_id"], bundle["chain"]["last"])
            proven = leaf.hex() == inclusion["leaf"] and merkle.verify_inclusion(
                leaf,
                inclusion["index"],
                inclusion["size"],
                [bytes.fromhex(h) for h in inclusion["path"]],
                bytes.fromhex(inclusion["root"]),
            )
            verdict.add("inclusion", proven, f"in checkpoint {inclusion['period']!r} of table {inclusion['table_id']}")
        balances_ok = all(b["after"] - b["before"] == nets.get(b["wallet"]) for b in bundle["balances"])
        verdict.add("balances", balances_ok, "every wallet's after = before + net")
    except (KeyError, TypeError, ValueError) as error:
        verdict.add("form", False, f"missing or malformed field: {error}")
    return verdict
