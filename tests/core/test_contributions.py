"""Commit, then contribute (docs/shuffle.md section 13): the client seed from the round's contributions.

Golden vectors of the derivation (the module, the reference of docs/shuffle.md and the JSON file
agree), the order of the opening (the commitment before every contribution), who may contribute
and until when (the last contribution counts; none after the deal), the deal that fixes the client
seed before the first card and shuffles the shoe from it, and properties over random rounds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_core import commands as c
from pokdeng_core import events as e
from pokdeng_core.errors import DomainError, InvalidCommand, NotYourTurn, WrongPhase
from pokdeng_core.limits import MAX_CLIENT_SEED
from pokdeng_core.machine import decide, decide_and_fold, legal_commands
from pokdeng_core.profiles import PROFILE_NAMES, get_profile
from pokdeng_core.round_evolve import replay
from pokdeng_core.round_state import BANKER, Phase, RoundState, attach_shoe, attach_stacked_shoe, shoe_client_seed
from pokdeng_core.shuffle import (
    CLIENT_SEED_RULE,
    PLATFORM,
    ShuffleError,
    client_seed_message,
    derive_client_seed,
    order_digest,
    order_text,
    shuffled_deck,
)

from .rounds import BIG, NONCE, SEED, Round, every_legal, open_round, play_randomly, random_command, stack
from .test_shuffle import REFERENCE

VECTORS_PATH = Path(__file__).with_name("client_seed_vectors.json")
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))["vectors"]
DOC = (Path(__file__).resolve().parents[2] / "docs" / "shuffle.md").read_text(encoding="utf-8")
DEFAULT = "c1d163e42241dcbf156b8b35da1403be76a25edf7e056d5f14783aebf064e6c9"


def _pairs(vector: dict[str, Any]) -> list[tuple[str, str]]:
    return [(contributor, seed) for contributor, seed in vector["contributions"]]


def _doc_derivations() -> list[dict[str, Any]]:
    out = []
    for block in re.findall(r"^```derivation\n(.*?)^```$", DOC, flags=re.DOTALL | re.MULTILINE):
        fields = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        fields["contributions"] = json.loads(fields["contributions"])
        out.append(fields)
    return out


def contributions_round(profile: str = "classic", platform: str = "", **kwargs: Any) -> Round:
    """An open round with contributions (``platform``: the StartRound client seed), shoe from ``SEED``."""
    return open_round(profile, client_seed=platform, client_seed_rule=CLIENT_SEED_RULE, **kwargs)


def contributed(played: Round) -> list[tuple[str, str]]:
    return [(ev.contributor, ev.client_seed) for ev in played.of(e.ClientSeedContributed)]


# --- the derivation ----------------------------------------------------------------------------


def independent_derivation(contributions: list[tuple[str, str]]) -> str:
    """The rule again, from its byte layout (docs/shuffle.md section 13)."""
    body = bytearray(b"pokdeng-client-seed-v1")
    body.append(0)
    body += len(contributions).to_bytes(4, "big")
    for contributor, seed in sorted(contributions, key=lambda p: p[0].encode("utf-8")):
        for text in (contributor, seed):
            raw = text.encode("utf-8")
            body += len(raw).to_bytes(2, "big") + raw
    return hashlib.sha256(bytes(body)).hexdigest()


def test_the_vector_file_covers_the_documented_cases() -> None:
    assert json.loads(VECTORS_PATH.read_text(encoding="utf-8"))["rule"] == CLIENT_SEED_RULE
    assert len(VECTORS) >= 4 and len({v["name"] for v in VECTORS}) == len(VECTORS)
    assert any(not v["contributions"] for v in VECTORS)
    assert sum(1 for v in VECTORS if len(v["contributions"]) >= 2) >= 2
    assert any(any(who == PLATFORM for who, _ in v["contributions"]) for v in VECTORS)
    assert any(any(not who.isascii() for who, _ in v["contributions"]) for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: str(v["name"]))
def test_module_reference_and_layout_reproduce_each_vector(vector: dict[str, Any]) -> None:
    pairs = _pairs(vector)
    assert client_seed_message(pairs).hex() == vector["message_hex"]
    assert hashlib.sha256(bytes.fromhex(vector["message_hex"])).hexdigest() == vector["client_seed"]
    assert derive_client_seed(pairs) == vector["client_seed"]
    assert REFERENCE["derive_client_seed"](pairs) == vector["client_seed"]
    assert independent_derivation(pairs) == vector["client_seed"]
    assert re.fullmatch(r"[0-9a-f]{64}", vector["client_seed"])
    if "shuffle" in vector:
        shuffle = vector["shuffle"]
        cards = shuffled_deck(
            bytes.fromhex(shuffle["server_seed_hex"]), vector["client_seed"], shuffle["nonce"], shuffle["decks"]
        )
        assert order_text(cards) == shuffle["order"] and order_digest(cards) == shuffle["order_sha256"]


def test_the_doc_publishes_the_same_vectors_and_the_default() -> None:
    doc = _doc_derivations()
    assert [d["name"] for d in doc] == [v["name"] for v in VECTORS]
    for published, vector in zip(doc, VECTORS, strict=True):
        assert published["contributions"] == vector["contributions"]
        assert published["client_seed"] == vector["client_seed"]
    assert derive_client_seed(()) == DEFAULT and DEFAULT in DOC
    assert f"`{CLIENT_SEED_RULE}`" in DOC
    three = next(v for v in VECTORS if v["name"] == "three-contributors")
    assert three["client_seed"] in DOC and three["shuffle"]["order_sha256"] in DOC
    shoe = DOC.split("that client seed gives this 52-card shoe", 1)[1].split("```")[1]
    assert " ".join(shoe.split()) == three["shuffle"]["order"]  # all 52 cards, in order


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=12), st.text(min_size=1, max_size=40), max_size=6))
def test_the_derivation_does_not_depend_on_the_order_given(contributions: dict[str, str]) -> None:
    pairs = list(contributions.items())
    expected = independent_derivation(pairs)
    assert derive_client_seed(pairs) == expected == REFERENCE["derive_client_seed"](pairs)
    assert derive_client_seed(list(reversed(pairs))) == expected


def test_every_field_is_length_prefixed_and_each_contributor_counts_once() -> None:
    assert derive_client_seed([("ab", "c")]) != derive_client_seed([("a", "bc")])
    assert derive_client_seed([("a", "b"), ("c", "d")]) != derive_client_seed([("a", "b\x00\x01c\x00\x01d")])
    assert derive_client_seed([(PLATFORM, "x")]) != derive_client_seed([("x", "")]) != derive_client_seed(())
    with pytest.raises(ShuffleError, match="once"):
        client_seed_message([("a", "1"), ("a", "2")])
    with pytest.raises(ShuffleError, match="UTF-8"):
        derive_client_seed([("a", "\ud800")])


# --- the opening: the commitment before any contribution ---------------------------------------


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_the_commitment_is_recorded_before_any_client_seed_exists(name: str) -> None:
    played = contributions_round(name, platform="the platform's")
    assert played.kinds == ["round_opened", "contributions_opened", "shuffle_committed", "client_seed_contributed"]
    opened, committed = played.one(e.ContributionsOpened), played.one(e.ShuffleCommitted)
    assert opened.rule == CLIENT_SEED_RULE and committed.client_seed == ""
    assert contributed(played) == [(PLATFORM, "the platform's")]
    state = played.state
    assert state.phase is Phase.BETTING and not state.seed_fixed and state.client_seed == ""
    assert state.shoe is not None and state.shoe.cards == () and shoe_client_seed(state) is None
    without = contributions_round(name)
    assert without.kinds == ["round_opened", "contributions_opened", "shuffle_committed"]


def test_a_round_without_contributions_is_what_it_always_was() -> None:
    played = open_round("classic", client_seed="given")
    assert played.kinds == ["round_opened", "shuffle_committed"]
    assert played.state.seed_fixed and played.state.client_seed == "given"
    assert played.state.shoe is not None and played.state.shoe.cards == shuffled_deck(SEED, "given", NONCE, 1)
    assert "contribute_seed" not in legal_commands(played.state)
    played.bet(1)
    assert legal_commands(played.state, 1) == ()
    played.refuse(c.ContributeSeed("p1", "x"), DomainError)
    played.refuse(c.PlaceBet(2, "p2", 100, BIG, None, "x"), DomainError)
    played.do(c.Deal())
    assert played.kinds[2:4] == ["bet_placed", "cards_dealt"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"client_seed": "x" * (MAX_CLIENT_SEED + 1)}, "client_seed"), ({"client_seed_rule": "v0"}, "client_seed_rule")],
)
def test_a_malformed_opening_is_refused(changes: dict[str, Any], field: str) -> None:
    from .test_machine import open_command

    command = open_command("classic", **{"client_seed_rule": CLIENT_SEED_RULE, **changes})
    with pytest.raises(InvalidCommand) as refused:
        decide(RoundState(), command)
    assert refused.value.field == field
    lone = open_command("classic", client_seed_rule=CLIENT_SEED_RULE, client_seed="\udc80")
    with pytest.raises(InvalidCommand):
        decide(RoundState(), lone)


# --- contributing ------------------------------------------------------------------------------


def test_bettors_contribute_with_their_stake_or_on_their_own_and_the_last_one_counts() -> None:
    played = contributions_round("classic", platform="first platform seed")
    (placed, seed) = played.do(c.PlaceBet(1, "p1", 100, BIG, None, "p1 first"))
    assert isinstance(placed, e.BetPlaced) and seed == e.ClientSeedContributed("p1", "p1 first")
    played.bet(2, player="p2")
    played.do(c.ContributeSeed("p2", "p2 only"))
    played.do(c.ContributeSeed("p1", "p1 second"))  # changed before the deal: this one counts
    played.do(c.ContributeSeed(None, "second platform seed"))
    expected = ((PLATFORM, "second platform seed"), ("p1", "p1 second"), ("p2", "p2 only"))
    assert played.state.contributions == expected
    events = played.do(c.Deal())
    fixed, dealt = events[0], events[1]
    assert isinstance(fixed, e.ClientSeedFixed) and isinstance(dealt, e.CardsDealt)
    derived = derive_client_seed(expected)
    assert fixed == e.ClientSeedFixed(derived, CLIENT_SEED_RULE, expected)
    assert played.state.client_seed == derived and played.state.seed_fixed
    shoe = shuffled_deck(SEED, derived, NONCE, 1)
    assert [card for _seat, card in dealt.cards] == [str(card) for card in shoe[:6]]
    assert played.state.shoe is not None and played.state.shoe.client_seed == derived
    # after the deal: refused, the seed stays as fixed
    played.refuse(c.ContributeSeed("p1", "too late"), WrongPhase)
    played.refuse(c.ContributeSeed(None, "too late"), WrongPhase)
    assert replay(played.events) == played.state


def test_the_core_counts_each_contributors_contributions() -> None:
    """What the service's bound on contributions reads (``limits.MAX_CONTRIBUTIONS``: it refuses more)."""
    played = contributions_round("classic")
    played.do(c.PlaceBet(1, "p1", 100, BIG, None, "with the stake"))  # a bet's contribution counts
    for n in range(3):
        played.do(c.ContributeSeed("p1", f"p1 #{n}"))
    played.do(c.ContributeSeed(None, "the platform's"))
    assert dict(played.state.contributions_sent) == {PLATFORM: 1, "p1": 4}
    assert played.state.contributions == ((PLATFORM, "the platform's"), ("p1", "p1 #2"))
    assert replay(played.events) == played.state


def test_a_change_before_the_deal_changes_the_deck() -> None:
    def deal(*seeds: str) -> tuple[str, tuple[tuple[int, str], ...]]:
        played = contributions_round("classic")
        played.bet(1)
        for seed in seeds:
            played.do(c.ContributeSeed("p1", seed))
        played.do(c.Deal())
        return played.state.client_seed, played.one(e.CardsDealt).cards

    none, first, changed, back = deal(), deal("alpha"), deal("alpha", "beta"), deal("beta", "alpha")
    assert none[0] == DEFAULT and len({none[0], first[0], changed[0]}) == 3
    assert back == first  # only the last one counts
    assert len({none[1], first[1], changed[1]}) == 3  # (these seeds deal differently)
    assert changed[0] == derive_client_seed([("p1", "beta")])


def test_no_contribution_gives_the_documented_default() -> None:
    played = contributions_round("ante")
    played.bet(1, player="ann")
    played.do(c.Deal())
    fixed = played.one(e.ClientSeedFixed)
    assert (fixed.client_seed, fixed.contributions) == (DEFAULT, ())
    assert played.state.shoe is not None
    assert played.state.shoe.cards == shuffled_deck(SEED, DEFAULT, NONCE, 8)


def test_who_may_contribute() -> None:
    played = contributions_round("room")  # a player-banker, "bank"
    played.refuse(c.ContributeSeed("p1", "no stake yet"), NotYourTurn)
    played.refuse(c.ContributeSeed("stranger", "x"), NotYourTurn)
    played.do(c.ContributeSeed("bank", "the banker's"))  # the player-banker has money on every stake
    played.do(c.ContributeSeed(None, "the platform's"))
    played.bet(1)
    played.do(c.ContributeSeed("p1", "now p1 may"))
    assert {who for who, _seed in played.state.contributions} == {PLATFORM, "bank", "p1"}
    for bad in ("", "x" * (MAX_CLIENT_SEED + 1), "\ud800"):
        error = played.refuse(c.ContributeSeed("p1", bad), InvalidCommand)
        assert isinstance(error, InvalidCommand) and error.field == "client_seed"
        error = played.refuse(c.PlaceBet(2, "p2", 100, BIG, BIG, bad), InvalidCommand)
        assert isinstance(error, InvalidCommand) and error.field == "client_seed"
    played.refuse(c.ContributeSeed("", "x"), InvalidCommand)  # no player id is empty (the platform: None)
    played.do(c.ContributeSeed("p1", "\x00 any text \U0001f0cf " + "s" * 200))


def test_a_stacked_shoe_keeps_its_order_when_the_seed_is_fixed() -> None:
    order = stack({1: "9S KD"}, "2C 3D")
    played = contributions_round("classic", shoe=order)
    played.bet(1)
    played.do(c.Deal())
    assert played.one(e.CardsDealt).cards == ((1, "9S"), (0, "2C"), (1, "KD"), (0, "3D"))
    assert played.one(e.ClientSeedFixed).client_seed == DEFAULT


def test_the_deal_needs_the_shoe_before_it_fixes_anything() -> None:
    played = contributions_round("classic")
    played.bet(1)
    with pytest.raises(DomainError, match="sealed"):
        decide(dataclasses.replace(played.state, shoe=None), c.Deal())
    assert attach_stacked_shoe(played.state, []).shoe is not None


def test_attaching_the_seed_again_after_the_deal_gives_the_dealt_shoe() -> None:
    played = contributions_round("kingmaker", platform="p")
    played.bet(1)
    played.do(c.ContributeSeed("p1", "mine"))
    played.do(c.Deal())
    folded = replay(played.events)  # the state as a store folds it: no shoe
    assert folded.shoe is None and shoe_client_seed(folded) == played.state.client_seed
    again = attach_shoe(folded, SEED)
    assert again.shoe is not None and played.state.shoe is not None
    assert again.shoe.cards == played.state.shoe.cards and again.shoe.client_seed == folded.client_seed


# --- legal commands and phases -----------------------------------------------------------------


def test_legal_commands_list_the_contribution_where_it_is_allowed() -> None:
    played = contributions_round("room")
    state = played.state
    assert "contribute_seed" in legal_commands(state)  # the platform
    assert legal_commands(state, BANKER) == ("contribute_seed",)  # the player-banker
    assert legal_commands(state, 1) == ("place_bet",)  # no stake yet: a stake (with a seed, if it likes)
    played.bet(1)
    assert legal_commands(played.state, 1) == ("contribute_seed",)
    played.do(c.Deal())
    for seat in (None, BANKER, 1, 2):
        assert "contribute_seed" not in legal_commands(played.state, seat)


def _phase_rounds() -> dict[Phase, RoundState]:
    """A contributions round in each phase it passes through (room: a banker's turn; kingmaker: side bets)."""
    found: dict[Phase, RoundState] = {}
    rnd = random.Random(4)
    for n in range(60):
        for name in ("room", "kingmaker", "classic"):
            played = contributions_round(name, server_seed=bytes([n]) * 32)
            found.setdefault(played.state.phase, played.state)
            while not played.state.is_closed:
                listed = [x for x in every_legal(played.state) if x[1] != c.VoidRound.name]
                if played.state.phase is Phase.BETTING:
                    listed = [x for x in listed if x[1] == c.PlaceBet.name] or [(None, c.Deal.name)]
                seat, chosen = rnd.choice(listed)
                played.do(random_command(rnd, played.state, chosen, seat))
                found.setdefault(played.state.phase, played.state)
        if len(found) >= 5:
            break
    return found


def test_a_contribution_outside_betting_is_refused_for_the_phase() -> None:
    phases = _phase_rounds()
    assert {Phase.BETTING, Phase.PLAYER_TURNS, Phase.BANKER_TURN, Phase.CLOSED} <= set(phases)
    for phase, state in phases.items():
        if phase is Phase.BETTING:
            continue
        with pytest.raises(WrongPhase) as refused:
            decide(state, c.ContributeSeed(None, "late"))
        assert phase.value in refused.value.message
    with pytest.raises(WrongPhase):
        decide(RoundState(), c.ContributeSeed(None, "early"))


# --- properties ----------------------------------------------------------------------------------


def _play_with_contributions(played: Round, rnd: random.Random, void_at: int | None) -> None:
    """Random bets and contributions (some changed, some with the stake), then the rest of the round."""
    for step in range(rnd.randint(1, 12)):
        if step == void_at:
            played.do(c.VoidRound("table closed"))
            return
        listed = every_legal(played.state)
        choices = [x for x in listed if x[1] in (c.PlaceBet.name, c.ContributeSeed.name)]
        if not choices:
            break
        seat, name = rnd.choice(choices)
        command = random_command(rnd, played.state, name, seat)
        if isinstance(command, c.PlaceBet) and rnd.random() < 0.5:  # a stake with a seed
            command = dataclasses.replace(command, client_seed=f"with the stake {step}")
        played.do(command)
    if played.state.bets and not played.state.is_closed:
        play_randomly(played, rnd)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(PROFILE_NAMES),
    seed=st.binary(min_size=16, max_size=32),
    platform=st.sampled_from(["", "house", "ประกาศ"]),
    choices=st.integers(0, 2**32),
    void_at=st.none() | st.integers(0, 6),
)
def test_every_round_fixes_the_derivation_of_its_last_contributions_before_the_first_card(
    name: str, seed: bytes, platform: str, choices: int, void_at: int | None
) -> None:
    rnd = random.Random(choices)
    played = contributions_round(name, platform=platform, server_seed=seed)
    _play_with_contributions(played, rnd, void_at)
    if not played.state.bets and not played.state.is_closed:
        return
    kinds = played.kinds
    committed = kinds.index("shuffle_committed")
    assert all(i > committed for i, k in enumerate(kinds) if k == "client_seed_contributed")
    last: dict[str, str] = {}
    for event in played.events:
        if isinstance(event, e.ClientSeedContributed):
            last[event.contributor] = event.client_seed
        if isinstance(event, e.ClientSeedFixed):
            break
    if "cards_dealt" in kinds:
        fixed = played.one(e.ClientSeedFixed)
        assert kinds.index("client_seed_fixed") == kinds.index("cards_dealt") - 1
        assert "client_seed_contributed" not in kinds[kinds.index("client_seed_fixed") :]
        assert dict(fixed.contributions) == last and list(fixed.contributions) == sorted(last.items())
        assert fixed.client_seed == derive_client_seed(last.items())
        shoe = [str(card) for card in shuffled_deck(seed, fixed.client_seed, NONCE, get_profile(name).decks)]
        used = [card for _seat, card in played.one(e.CardsDealt).cards]
        used += [ev.card for ev in played.of(e.CardDrawn)]
        assert used == shoe[: len(used)]  # the deal, then each draw, from the top of the derived shoe
    else:
        assert "client_seed_fixed" not in kinds
    assert replay(played.events) == played.state
    opened = decide_and_fold(RoundState(), played.commands[0])
    assert list(opened.events) == played.events[: len(opened.events)]
