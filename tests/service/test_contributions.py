"""Client seed contributions through the application (docs/shuffle.md section 13, docs/audit.md).

Players contribute with their own principals (with the stake and on their own, changing their
minds before the deal), the operator as the platform; the deal fixes the derived client seed before
the first card; the audit and the offline bundle check the contributions, the order of the record
and the cards. The shoe cache never deals from a shoe shuffled for another client seed. Rounds of
the engine before contributions (1.0.0: the client seed in the opening), stored or bundled, verify.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from pokdeng_core.errors import NotYourTurn, WrongPhase
from pokdeng_core.round_state import Shoe
from pokdeng_core.shuffle import CLIENT_SEED_RULE, PLATFORM, derive_client_seed, shuffled_deck
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import PermissionDenied, RequestInvalid
from pokdeng_service.application.principal import SYSTEM, Principal, Role
from pokdeng_service.application.round_commands import ContributeSeed, Deal, PlaceBet
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.audit.replay import check_client_seed, check_replay
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store.codec import chain_digest, genesis_digest

from . import play

LEGACY = Path(__file__).with_name("legacy")
PLAYERS = ("ann", "ben", "cat")


def as_player(name: str) -> Principal:
    return Principal(Role.PLAYER, name)


class Requests:
    """Request ids for commands sent with a principal of our choosing."""

    def __init__(self, app: PokdengApp) -> None:
        self.app = app
        self.n = 0

    def send(self, principal: Principal, command: object) -> object:
        self.n += 1
        return self.app.handle(principal, f"contrib-{self.n}", command)  # type: ignore[arg-type]


def _table(d: play.Driver, table_id: str = "ct", profile: str = "classic") -> None:
    play.open_wallets(d, [f"{table_id}-{p}" for p in PLAYERS])
    play.open_table(d, table_id, profile, [(i + 1, f"{table_id}-{p}") for i, p in enumerate(PLAYERS)])


def _contributed_round(d: play.Driver, requests: Requests, table_id: str = "ct") -> tuple[str, dict[str, str]]:
    """A round where two players contribute (one changes its mind), the third does not, and the
    platform contributes at the opening and again; returns the round and the contributions that count."""
    ann, ben, cat = (f"{table_id}-{p}" for p in PLAYERS)
    round_id = play.start_round(d, table_id, "the platform at the opening")
    requests.send(as_player(ann), PlaceBet(round_id, 1, ann, 200, "ann's first seed"))
    requests.send(as_player(ben), PlaceBet(round_id, 2, ben, 200))
    requests.send(as_player(cat), PlaceBet(round_id, 3, cat, 200))
    requests.send(as_player(ben), ContributeSeed(round_id, ben, "ben: ฿ 🎲"))
    requests.send(as_player(ann), ContributeSeed(round_id, ann, "ann changed her mind"))
    requests.send(SYSTEM, ContributeSeed(round_id, None, "the platform, later"))
    counted = {PLATFORM: "the platform, later", ann: "ann changed her mind", ben: "ben: ฿ 🎲"}
    return round_id, counted


def test_a_round_with_player_contributions_deals_from_the_derived_seed_and_verifies(
    app: PokdengApp, driver: play.Driver
) -> None:
    requests = Requests(app)
    _table(driver)
    round_id, counted = _contributed_round(driver, requests)
    kinds = play.kinds(app.get_round(round_id))
    assert kinds[1:5] == ["round_opened", "contributions_opened", "shuffle_committed", "client_seed_contributed"]
    assert app.round_state(round_id).client_seed == ""  # nothing fixed before the deal
    dealt = requests.send(SYSTEM, Deal(round_id))
    dealt_kinds = [e.kind for e in dealt.events]  # type: ignore[attr-defined]
    assert dealt_kinds[:2] == ["client_seed_fixed", "cards_dealt"]
    fixed = dealt.events[0].data  # type: ignore[attr-defined]
    derived = derive_client_seed(counted.items())
    assert fixed["client_seed"] == derived and fixed["rule"] == CLIENT_SEED_RULE
    assert [tuple(p) for p in fixed["contributions"]] == sorted(counted.items())
    with pytest.raises(WrongPhase):
        requests.send(as_player("ct-ann"), ContributeSeed(round_id, "ct-ann", "too late"))
    view = play.drive_round(driver, round_id)
    assert view.client_seed == derived
    play.assert_cards_from_shoe(view)  # the cards are the shuffle of (revealed seed, derived seed, nonce)
    verdict = audit.verify_round(app, round_id, check_wallets=True)
    assert verdict.ok, verdict.render()
    check = next(c for c in verdict.checks if c.name == "client seed")
    assert derived in check.detail and "3 contribution(s)" in check.detail
    assert not any(c.name == "engine" for c in verdict.checks)
    bundle = audit.export_bundle(app, round_id)
    shuffle = bundle["shuffle"]
    assert shuffle["client_seed"] == derived and shuffle["client_seed_rule"] == CLIENT_SEED_RULE
    assert [tuple(p) for p in shuffle["contributions"]] == sorted(counted.items())
    seed = bytes.fromhex(shuffle["server_seed"])
    assert shuffle["deck_order"] == [str(c) for c in shuffled_deck(seed, derived, shuffle["nonce"], 1)]
    decisions = [d["command"] for d in bundle["decisions"]]
    assert decisions.count("contribute_seed") == 3 and decisions[0] == "open_round"
    raw = audit.bundle_bytes(bundle)
    offline = audit.verify_bundle(raw)
    assert offline.ok, offline.render()
    assert any(c.name == "client seed" and c.ok for c in offline.checks)


def test_who_may_contribute_through_the_application(app: PokdengApp, driver: play.Driver) -> None:
    requests = Requests(app)
    _table(driver, "cw")
    round_id = play.start_round(driver, "cw")
    requests.send(as_player("cw-ann"), PlaceBet(round_id, 1, "cw-ann", 200))
    before = app.max_position
    with pytest.raises(PermissionDenied):  # another player's token
        requests.send(as_player("cw-ben"), ContributeSeed(round_id, "cw-ann", "forged"))
    with pytest.raises(PermissionDenied):  # a player is not the platform
        requests.send(as_player("cw-ann"), ContributeSeed(round_id, None, "as the platform"))
    with pytest.raises(PermissionDenied):
        requests.send(as_player("cw-ben"), PlaceBet(round_id, 1, "cw-ann", 200, "forged"))
    with pytest.raises(NotYourTurn):  # no stake in the round
        requests.send(as_player("cw-ben"), ContributeSeed(round_id, "cw-ben", "no stake"))
    auditor = Principal(Role.AUDITOR)
    with pytest.raises(PermissionDenied):
        requests.send(auditor, ContributeSeed(round_id, None, "an auditor"))
    for bad in ("", "s" * 257):
        with pytest.raises(RequestInvalid) as caught:
            requests.send(as_player("cw-ann"), ContributeSeed(round_id, "cw-ann", bad))
        assert [v.field for v in caught.value.violations] == ["client_seed"]
        with pytest.raises(RequestInvalid):
            requests.send(as_player("cw-ben"), PlaceBet(round_id, 2, "cw-ben", 200, bad))
    assert app.max_position == before  # nothing refused was written
    assert app.legal_commands(round_id, 1) == ("contribute_seed",)
    assert "contribute_seed" in app.legal_commands(round_id)
    requests.send(as_player("cw-ann"), ContributeSeed(round_id, "cw-ann", "mine"))
    requests.send(SYSTEM, ContributeSeed(round_id, "", "the platform's (an empty player)"))
    assert app.round_state(round_id).contributions == (
        (PLATFORM, "the platform's (an empty player)"),
        ("cw-ann", "mine"),
    )
    # a retry of the same request answers the first result and writes nothing
    first = app.handle(as_player("cw-ann"), "same-id", ContributeSeed(round_id, "cw-ann", "again"))
    position = app.max_position
    again = app.handle(as_player("cw-ann"), "same-id", ContributeSeed(round_id, "cw-ann", "again"))
    assert again.replayed and again.events == first.events and app.max_position == position


def test_the_shoe_cache_never_deals_from_a_stale_shoe(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    d = play.Driver(app, chooser=play.Chooser(random.Random(2)))
    requests = Requests(app)
    _table(d, "cc")
    for n in range(20):  # until a deal leaves the round open (no pok all round)
        round_id = play.start_round(d, "cc")
        cached = app._shoes[round_id]
        assert cached.server_seed and cached.cards == () and cached.client_seed is None  # the seed alone
        requests.send(as_player("cc-ann"), PlaceBet(round_id, 1, "cc-ann", 200, f"ann {n}"))
        requests.send(as_player("cc-ben"), PlaceBet(round_id, 2, "cc-ben", 200))
        seed, nonce = app.server_seed(round_id), app.round_state(round_id).nonce
        # a shoe shuffled for another client seed, left in the cache, is not dealt from
        app._shoes[round_id] = Shoe(seed, shuffled_deck(seed, "somebody else's seed", nonce), "other")
        result = requests.send(SYSTEM, Deal(round_id))
        derived = derive_client_seed([("cc-ann", f"ann {n}")])
        cards = [card for _seat, card in result.events[1].data["cards"]]  # type: ignore[attr-defined]
        shoe = shuffled_deck(seed, derived, nonce)
        assert cards == [str(c) for c in shoe[: len(cards)]]
        if not app.round_state(round_id).is_closed:
            break
        assert audit.verify_round(app, round_id, check_wallets=True).ok
    else:
        raise AssertionError("every deal closed its round")
    assert app._shoes[round_id].client_seed == derived  # the dealt shoe is the one remembered
    # a fresh instance on the same store (nothing cached) unseals and shuffles the same shoe
    other = make_app()
    assert other.load_round(round_id).state.shoe == Shoe(seed, shoe, derived)
    # and an instance whose cache kept the shoe of before the deal shuffles it afresh
    other._shoes[round_id] = Shoe(seed, ())
    assert other.load_round(round_id).state.shoe == Shoe(seed, shoe, derived)
    view = play.drive_round(play.Driver(other, prefix="other"), round_id)
    play.assert_cards_from_shoe(view)
    assert audit.verify_round(other, round_id, check_wallets=True).ok


def test_a_round_voided_before_its_deal_has_no_client_seed_and_verifies(app: PokdengApp, driver: play.Driver) -> None:
    requests = Requests(app)
    _table(driver, "cv")
    round_id = play.start_round(driver, "cv", "platform")
    requests.send(as_player("cv-ann"), PlaceBet(round_id, 1, "cv-ann", 200, "ann"))
    driver.call("void_round", round_id, "closing early")
    verdict = audit.verify_round(app, round_id, check_wallets=True)
    assert verdict.ok, verdict.render()
    assert "never fixed" in next(c for c in verdict.checks if c.name == "client seed").detail
    bundle = audit.export_bundle(app, round_id)
    assert bundle["shuffle"]["client_seed"] == "" and bundle["shuffle"]["deck_order"] == []
    assert audit.verify_bundle(audit.bundle_bytes(bundle)).ok


# --- the audit's checks of contributions, on an edited record whose chain is recomputed ---------------


def _rechained(round_id: str, events: list[RecordedEvent]) -> list[RecordedEvent]:
    """``events`` renumbered from position 2 and digested again: an edit the chain alone cannot see."""
    previous = genesis_digest(round_id)
    out = []
    for position, event in enumerate(events, start=2):
        digest = chain_digest(previous, event.kind, event.data, position, event.command_id, event.timestamp)
        out.append(event._replace(position=position, digest=digest))
        previous = digest
    return out


def _edited(app: PokdengApp, round_id: str, edit: Callable[[list[RecordedEvent]], None]) -> Verdict:
    events = [e for e in app.round_events(round_id) if e.digest]
    edit(events)
    verdict = Verdict(round_id)
    check_replay(verdict, _rechained(round_id, events))
    return verdict


def test_the_audit_checks_the_derivation_and_the_order_of_the_record(app: PokdengApp, driver: play.Driver) -> None:
    requests = Requests(app)
    _table(driver)
    round_id, _counted = _contributed_round(driver, requests)
    play.drive_round(driver, round_id)
    untouched = _edited(app, round_id, lambda events: None)
    assert untouched.ok, untouched.render()

    def at(events: list[RecordedEvent], kind: str) -> int:
        return next(i for i, e in enumerate(events) if e.kind == kind)

    def forge_seed(events: list[RecordedEvent]) -> None:
        i = at(events, "client_seed_fixed")
        events[i] = events[i]._replace(data={**events[i].data, "client_seed": "ab" * 32})

    def drop_contribution(events: list[RecordedEvent]) -> None:
        i = at(events, "client_seed_fixed")
        used = events[i].data["contributions"][1:]
        data = {**events[i].data, "contributions": used, "client_seed": derive_client_seed(used)}
        events[i] = events[i]._replace(data=data)

    def contribute_before_the_commitment(events: list[RecordedEvent]) -> None:
        platform = events.pop(at(events, "client_seed_contributed"))
        events.insert(at(events, "shuffle_committed"), platform)

    def contribute_after_the_deal(events: list[RecordedEvent]) -> None:
        late = events[at(events, "client_seed_contributed")]._replace(command_id="late")
        events.insert(at(events, "cards_dealt") + 1, late)

    for edit, needle in (
        (forge_seed, "the derivation gives"),
        (drop_contribution, "the last contributions were"),
        (contribute_before_the_commitment, "before the commitment"),
        (contribute_after_the_deal, "after the client seed was fixed"),
    ):
        verdict = _edited(app, round_id, edit)
        check = next(c for c in verdict.checks if c.name == "client seed")
        assert not check.ok and needle in check.detail, (edit.__name__, verdict.render())
        assert not verdict.ok
    events = [e for e in app.round_events(round_id) if e.digest]
    alone = Verdict(round_id)
    check_client_seed(alone, events)
    assert alone.ok


# --- rounds of the engine before contributions ------------------------------------------------------


@pytest.mark.parametrize("name", ["kingmaker-settled-1.0.0.json", "kingmaker-voided-1.0.0.json"])
def test_bundles_exported_by_engine_1_0_0_still_verify_offline(name: str) -> None:
    """Exported by the code of before this change (client seed in the opening), byte for byte."""
    raw = (LEGACY / name).read_bytes()
    bundle = json.loads(raw)
    assert bundle["engine_version"] == "1.0.0" and "contributions" not in bundle["shuffle"]
    assert [e["kind"] for e in bundle["events"]][:2] == ["round_opened", "shuffle_committed"]
    verdict = audit.verify_bundle(raw)
    assert verdict.ok, verdict.render()
    engine = next(c for c in verdict.checks if c.name == "engine")
    assert "1.0.0" in engine.detail
    assert "given with the commitment" in next(c for c in verdict.checks if c.name == "client seed").detail
    assert not audit.verify_bundle(raw.replace(b'"nonce":', b'"nonce" :', 1)).ok


def test_stored_rounds_of_engine_1_0_0_still_verify(
    app: PokdengApp, driver: play.Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds recorded the old way (client seed with the commitment, no contributions), one of them
    still open when the engine changes, verify live and offline under this engine."""
    from pokdeng_core import round_opening
    from pokdeng_service.application import rounds
    from pokdeng_service.store import aggregates

    _table(driver, "old")
    with monkeypatch.context() as old_engine:
        old_engine.setattr(rounds, "CLIENT_SEED_RULE", "")
        old_engine.setattr(round_opening, "ENGINE_VERSION", "1.0.0")
        old_engine.setattr(aggregates, "ENGINE_VERSION", "1.0.0")
        finished = play.start_round(driver, "old", "the old way")
        play.seat_bets(driver, finished, 200)
        play.drive_round(driver, finished)
        still_open = play.start_round(driver, "old", "opened before the upgrade")
        play.seat_bets(driver, still_open, 200)
    assert app.legal_commands(still_open, 1) == ()  # its client seed was given: no contributions
    with pytest.raises(Exception, match="takes no contributions"):
        Requests(app).send(as_player("old-ann"), ContributeSeed(still_open, "old-ann", "too new"))
    play.drive_round(driver, still_open)  # dealt by the new engine, from the seed of its opening
    for round_id, seed in ((finished, "the old way"), (still_open, "opened before the upgrade")):
        view = app.get_round(round_id)
        assert [e.kind for e in view.events][1:3] == ["round_opened", "shuffle_committed"]
        assert view.client_seed == seed and "client_seed_fixed" not in play.kinds(view)
        play.assert_cards_from_shoe(view)
        verdict = audit.verify_round(app, round_id, check_wallets=True)
        assert verdict.ok, verdict.render()
        assert "given with the commitment" in next(c for c in verdict.checks if c.name == "client seed").detail
        offline = audit.verify_bundle(audit.bundle_bytes(audit.export_bundle(app, round_id)))
        assert offline.ok, offline.render()
    engine = next(c for c in audit.verify_round(app, finished, check_wallets=True).checks if c.name == "engine")
    assert "recorded by engine 1.0.0" in engine.detail
