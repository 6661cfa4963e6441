"""Client seed contributions over gRPC (docs/shuffle.md section 13).

Each player contributes with its own token, through its stake (``PlaceBet.client_seed``) and through
``ContributeSeed``, and changes its mind before the deal; the operator contributes as the platform.
Another player's token cannot contribute for someone else, a player is not the platform, and after
the deal nothing is accepted. The deal fixes the derived client seed before the first card; the
auditor's verification and the exported bundle check it.
"""

from __future__ import annotations

import json
import random

import grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_core.shuffle import CLIENT_SEED_RULE, PLATFORM, derive_client_seed, shuffled_deck
from pokdeng_service import audit
from pokdeng_service.api.errors import details_of

from .client import Choices, error_of, kind_of, open_table, open_wallets, payload, play_round, seat
from .conftest import Served

Code = grpc.StatusCode


def contribute(who: str, round_id: str, seed: str) -> pb.ContributeSeedRequest:
    return pb.ContributeSeedRequest(round_id=round_id, player=who, client_seed=seed)


def test_players_contribute_through_the_bet_and_on_their_own(served: Served) -> None:
    ops, auditor, players = served.api("operator"), served.api("auditor"), served.players()
    alice, bob, carol = players["alice"], players["bob"], players["carol"]
    open_wallets(ops, ["alice", "bob", "carol"])
    open_table(ops, "seeds", pb.PROFILE_CLASSIC, seats=4)
    for number, (who, api) in enumerate((("alice", alice), ("bob", bob), ("carol", carol)), start=1):
        seat(api, "seeds", who, number)
    started = ops.cmd(
        "RoundService", "StartRound", pb.StartRoundRequest(table_id="seeds", client_seed="the platform first")
    )
    opened = started.round
    round_id = opened.round_id
    kinds = [kind_of(e) for e in started.events]
    assert kinds[-4:] == ["round_opened", "contributions_opened", "shuffle_committed", "client_seed_contributed"]
    assert not opened.client_seed and len(opened.commitment) == 64  # committed; no client seed yet

    # alice contributes with her stake
    request = pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=200, client_seed="alice: 🍀")
    placed = alice.cmd("RoundService", "PlaceBet", request)
    assert [kind_of(e) for e in placed.events] == ["bet_placed", "client_seed_contributed"]
    assert payload(placed.events[1]) == {"contributor": "alice", "client_seed": "alice: 🍀", "by": ""}
    # bob stakes, then contributes on his own, and changes his mind
    bob.cmd("RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=2, player="bob", stake=200))
    assert bob.legal(round_id, 2) == ["contribute_seed"]
    first = bob.cmd("RoundService", "ContributeSeed", contribute("bob", round_id, "bob's first"))
    assert [kind_of(e) for e in first.events] == ["client_seed_contributed"]
    bob.cmd("RoundService", "ContributeSeed", contribute("bob", round_id, "bob's second"))
    # carol stakes without a seed; the operator contributes as the platform (no player)
    carol.cmd("RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=3, player="carol", stake=200))
    ops.cmd("RoundService", "ContributeSeed", contribute("", round_id, "the platform, later"))

    written = served.app.max_position
    # another player's token cannot contribute for someone else, neither on its own nor with a stake
    forged = error_of(lambda: carol.cmd("RoundService", "ContributeSeed", contribute("alice", round_id, "carol's")))
    assert forged.code() == Code.PERMISSION_DENIED
    forged_bet = pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=100, client_seed="carol's")
    assert error_of(lambda: carol.cmd("RoundService", "PlaceBet", forged_bet)).code() == Code.PERMISSION_DENIED
    # a player is not the platform
    platform = error_of(lambda: alice.cmd("RoundService", "ContributeSeed", contribute("", round_id, "alice as house")))
    assert platform.code() == Code.PERMISSION_DENIED
    # the auditor sends no command; a player without a stake does not contribute
    by_auditor = error_of(lambda: auditor.cmd("RoundService", "ContributeSeed", contribute("", round_id, "x")))
    assert by_auditor.code() == Code.PERMISSION_DENIED
    stranger = error_of(
        lambda: players["dave"].cmd("RoundService", "ContributeSeed", contribute("dave", round_id, "x"))
    )
    assert stranger.code() == Code.FAILED_PRECONDITION and details_of(stranger).reason == "NOT_YOUR_TURN"
    # malformed seeds
    empty = pb.PlaceBetRequest(round_id=round_id, seat=4, player="alice", stake=100, client_seed="")
    assert error_of(lambda: alice.cmd("RoundService", "PlaceBet", empty)).code() == Code.INVALID_ARGUMENT
    long = contribute("alice", round_id, "s" * 257)
    assert error_of(lambda: alice.cmd("RoundService", "ContributeSeed", long)).code() == Code.INVALID_ARGUMENT
    assert served.app.max_position == written  # nothing refused was written

    dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
    assert [kind_of(e) for e in dealt.events][:2] == ["client_seed_fixed", "cards_dealt"]
    fixed = payload(dealt.events[0])
    counted = {PLATFORM: "the platform, later", "alice": "alice: 🍀", "bob": "bob's second"}
    derived = derive_client_seed(counted.items())
    assert fixed == {
        "client_seed": derived,
        "rule": CLIENT_SEED_RULE,
        "contributions": [list(pair) for pair in sorted(counted.items())],
    }
    late = error_of(lambda: alice.cmd("RoundService", "ContributeSeed", contribute("alice", round_id, "too late")))
    assert late.code() == Code.FAILED_PRECONDITION and details_of(late).reason == "WRONG_PHASE"

    closed = play_round(ops, players, round_id, Choices(random.Random(7)))
    assert closed.client_seed == derived and closed.server_seed
    deck = shuffled_deck(bytes.fromhex(closed.server_seed), derived, closed.nonce, 1)
    dealt_cards = [card for _seat, card in payload(dealt.events[1])["cards"]]
    assert dealt_cards == [str(c) for c in deck[: len(dealt_cards)]]
    verdict = auditor.get("AuditService", "VerifyRound", pb.VerifyRoundRequest(round_id=round_id))
    assert verdict.ok, verdict.first_difference
    check = next(c for c in verdict.checks if c.name == "client seed")
    assert check.passed and derived in check.detail
    bundle = auditor.get("AuditService", "ExportRound", pb.ExportRoundRequest(round_id=round_id))
    exported = json.loads(bundle.bundle_json)
    assert exported["shuffle"]["client_seed"] == derived
    assert exported["shuffle"]["contributions"] == [list(pair) for pair in sorted(counted.items())]
    offline = audit.verify_bundle(bundle.bundle_json.encode())
    assert offline.ok, offline.first_difference


def test_one_contributor_sends_a_round_at_most_eight_contributions(served: Served) -> None:
    """Found from the outside: a bettor sent 6,500 contributions of 256 characters, and its round's full
    view and bundle outgrew what a client receives (4 MB). Now each contributor (the platform too) has
    ``MAX_CONTRIBUTIONS``, its bet's and the opening's included; the next is refused and writes nothing."""
    from pokdeng_core.limits import MAX_CONTRIBUTIONS

    ops, players = served.api("operator"), served.players()
    alice, bob = players["alice"], players["bob"]
    open_wallets(ops, ["alice", "bob"])
    open_table(ops, "bounded", pb.PROFILE_CLASSIC, seats=3)
    seat(alice, "bounded", "alice", 1)
    seat(bob, "bounded", "bob", 2)
    started = ops.cmd("RoundService", "StartRound", pb.StartRoundRequest(table_id="bounded", client_seed="p0"))
    round_id = started.round.round_id
    request = pb.PlaceBetRequest(round_id=round_id, seat=1, player="alice", stake=200, client_seed="a" * 256)
    alice.cmd("RoundService", "PlaceBet", request)
    for n in range(MAX_CONTRIBUTIONS - 1):
        alice.cmd("RoundService", "ContributeSeed", contribute("alice", round_id, f"{n}" * 256))
    for n in range(1, MAX_CONTRIBUTIONS):
        ops.cmd("RoundService", "ContributeSeed", contribute("", round_id, f"p{n}"))
    written = served.app.max_position
    for api, who in ((alice, "alice"), (ops, "")):
        refused = error_of(
            lambda api=api, who=who: api.cmd("RoundService", "ContributeSeed", contribute(who, round_id, "x"))
        )
        details = details_of(refused)
        assert refused.code() == Code.FAILED_PRECONDITION and details.reason == "TOO_MANY_CONTRIBUTIONS", details
        assert details.metadata == ({"player": who} if who else {}) and str(MAX_CONTRIBUTIONS) in details.message
    assert served.app.max_position == written  # nothing written
    # nor with a stake (found from the outside: a backer's bet on another seat carried a ninth)
    seat_two = pb.PlaceBetRequest(round_id=round_id, seat=2, player="alice", stake=200, client_seed="ninth")
    staked = details_of(error_of(lambda: alice.cmd("RoundService", "PlaceBet", seat_two)))
    assert staked.reason == "TOO_MANY_CONTRIBUTIONS" and served.app.max_position == written, staked
    bob.cmd("RoundService", "PlaceBet", pb.PlaceBetRequest(round_id=round_id, seat=2, player="bob", stake=200))
    bob.cmd("RoundService", "ContributeSeed", contribute("bob", round_id, "bob is not held back"))
    dealt = ops.cmd("RoundService", "Deal", pb.DealRequest(round_id=round_id))
    fixed = next(e for e in dealt.events if kind_of(e) == "client_seed_fixed")
    last = {
        PLATFORM: f"p{MAX_CONTRIBUTIONS - 1}",
        "alice": f"{MAX_CONTRIBUTIONS - 2}" * 256,
        "bob": "bob is not held back",
    }
    assert [tuple(pair) for pair in payload(fixed)["contributions"]] == sorted(last.items())
