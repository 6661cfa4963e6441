"""The lost-key procedure of docs/operations.md, end to end: with the vault key gone, the open rounds
are voided (a void never needs the key: the round closes without revealing its seed), every
reservation is released, the closed rounds still verify, and the voided rounds verify as voided
with their seed withheld."""

from __future__ import annotations

from collections.abc import Callable

from pokdeng_core.round_state import Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.store.vault import SeedVault
from pokdeng_testkit.keys import OTHER_VAULT_KEY

from . import play


def test_with_the_vault_key_lost_open_rounds_are_voided_and_the_rest_verifies(
    make_app: Callable[..., PokdengApp], app_env: dict[str, str]
) -> None:
    app = make_app()
    driver = play.Driver(app)
    play.open_wallets(driver, ["a", "b"])
    play.open_table(driver, "k", "classic", [(1, "a"), (2, "b")])
    closed = play.start_round(driver, "k")
    play.seat_bets(driver, closed, 100)
    play.drive_round(driver, closed)
    dealt = ""
    for _ in range(30):  # a round in its player turns: cards dealt from the seed that will be lost
        dealt = play.start_round(driver, "k")
        play.seat_bets(driver, dealt, 100)
        driver.call("deal", dealt)
        if app.round_state(dealt).phase is Phase.PLAYER_TURNS:
            break
        play.drive_round(driver, dealt)
    assert app.round_state(dealt).phase is Phase.PLAYER_TURNS
    app.close()

    lost = PokdengApp(app_env, vault=SeedVault.from_hex(OTHER_VAULT_KEY))  # another key: the old one is gone
    try:
        assert lost.get_wallet("a").reserved > 0
        voided = lost.void_round("void-1", dealt, "vault key lost")
        kinds = [e.kind for e in voided.events]
        assert kinds[0] == "round_voided" and kinds[-1] == "round_closed" and "seed_revealed" not in kinds
        assert lost.get_wallet("a").reserved == lost.get_wallet("b").reserved == 0
        assert audit.verify_round(lost, closed, check_wallets=True).ok
        verdict = audit.verify_round(lost, dealt, check_wallets=True)
        assert verdict.ok, verdict.render()
        assert "withheld" in verdict.render()
        offline = audit.verify_bundle(audit.bundle_bytes(audit.export_bundle(lost, dealt)))  # the bundle, too
        assert offline.ok and "withheld" in offline.render(), offline.render()
    finally:
        lost.close()
