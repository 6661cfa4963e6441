"""Make docs/examples/worked_round.json: the worked example of docs/audit.md, played by the real service.

One small classic round (table ``demo``, round ``demo#1``: two players and the house as dealer), in
an in-memory store that also closes four other one-player rounds around it, so that the store's log
of closed rounds has five leaves and the round's inclusion proofs are not empty. Then the operator
checkpoints table ``demo`` and signs a tree head, and the round is exported as a bundle.

Everything random is fixed, so every run writes the same bytes (tests/test_audit_docs.py checks it):

* the server seeds: round n (in the order the rounds start) gets SHA-256 of the ASCII text
  ``pokdeng worked example, server seed n``, except the worked round (the third to start), whose
  text has the suffix `` #236``: the first suffix ``#1``, ``#2``, ... for which both players and
  the dealer keep their first two cards apart from one player and the dealer drawing a third, one
  player losing on a deng difference and one winning;
* the clock: every recorded event is 1.234 ms after the one before, from 2026-03-14T15:09:26.535897Z;
* the log id: ``pokdeng-`` and the first 16 hex digits of SHA-256(``pokdeng worked example log``);
* the keys are TEST KEYS, published here, never to be used for anything real: the vault key
  ``VAULT_KEY`` (it seals nothing the bundle shows) and the Ed25519 signing key ``SIGNING_KEY``,
  the secret key of test 1 of RFC 8032 section 7.1, whose public key is
  ``d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a``.

These are pinned by replacing four module globals of the service (``fresh_seed``, ``_now``,
``new_log_id``, ``now_ms``); this script is for the docs only, a server never does this.

Run from anywhere:  python docs/examples/make_worked_round.py [-o FILE]   (default: beside this file)
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pokdeng_service import audit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

VAULT_KEY = "7e57" * 16  # a test key
SIGNING_KEY = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"  # RFC 8032 test 1: a test key
PUBLIC_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
START = datetime(2026, 3, 14, 15, 9, 26, 535897, tzinfo=UTC)
STEP = timedelta(microseconds=1234)
LOG_ID = "pokdeng-" + hashlib.sha256(b"pokdeng worked example log").hexdigest()[:16]
ROUND_ID = "demo#1"


WORKED_SEED_SUFFIX = {3: " #236"}


def server_seed(n: int) -> bytes:
    text = f"pokdeng worked example, server seed {n}{WORKED_SEED_SUFFIX.get(n, '')}"
    return hashlib.sha256(text.encode()).digest()


class Clock:
    """The pinned clock: each call is one step after the one before."""

    def __init__(self) -> None:
        self.now = START - STEP

    def tick(self) -> datetime:
        self.now += STEP
        return self.now

    def ms(self) -> int:
        return int(self.now.timestamp() * 1000)


def _pin(module: Any, name: str, value: Any) -> None:
    if not hasattr(module, name):
        raise SystemExit(f"{module.__name__}.{name} is gone: this script needs updating")
    setattr(module, name, value)


def build() -> dict[str, Any]:
    """Play the rounds and return the bundle of ``demo#1``."""
    sys.path.insert(0, str(ROOT))
    from pokdeng_service.application import PokdengApp, checkpoints, rounds
    from pokdeng_service.store import aggregates
    from pokdeng_service.store.signing import KeyRing, SigningKey
    from pokdeng_service.store.vault import SeedVault

    clock = Clock()
    seeds: Iterator[bytes] = (server_seed(n) for n in range(1, 1000))
    _pin(aggregates, "_now", clock.tick)
    _pin(rounds, "fresh_seed", lambda: next(seeds))
    _pin(checkpoints, "new_log_id", lambda: LOG_ID)
    _pin(checkpoints, "now_ms", clock.ms)

    app = PokdengApp(
        {"PERSISTENCE_MODULE": "eventsourcing.popo"},
        vault=SeedVault.from_hex(VAULT_KEY),
        signing_keys=KeyRing.of(SigningKey.from_hex(SIGNING_KEY)),
    )
    counter = iter(range(1, 10_000))

    def call(command: str, *args: Any, **kwargs: Any) -> Any:
        method: Callable[..., Any] = getattr(app, command)
        return method(f"worked-{next(counter)}", *args, **kwargs)

    try:
        for name in ("ann", "bob", "cat"):
            call("open_wallet", name)
            call("deposit", name, 10_000)
        call("open_table", "demo", "classic", None, min_stake=100, max_stake=1000, seats=5, dealer=None)
        call("take_seat", "demo", "ann", 1)
        call("take_seat", "demo", "bob", 2)
        call("open_table", "other", "classic", None, min_stake=100, max_stake=1000, seats=5, dealer=None)
        call("take_seat", "other", "cat", 1)

        def other_round() -> None:
            round_id = call("start_round", "other", "").id
            call("place_bet", round_id, 1, "cat", 100)
            _play(app, call, round_id)

        other_round()
        other_round()
        # The worked round: the platform contributes with the opening, ann with her stake, bob on his own.
        round_id = call("start_round", "demo", "house-7f3a").id
        assert round_id == ROUND_ID, round_id
        call("place_bet", round_id, 1, "ann", 200, client_seed="ann-lucky-7")
        call("place_bet", round_id, 2, "bob", 300)
        call("contribute_seed", round_id, "bob", "bob-rolls-4")
        _play(app, call, round_id)
        other_round()
        second = call("start_round", "demo", "").id
        call("place_bet", second, 1, "ann", 100)
        _play(app, call, second)
        call("checkpoint_table", "demo", "2026-03-14")
        call("sign_tree_head")
        bundle: dict[str, Any] = audit.export_bundle(app, ROUND_ID)
        return bundle
    finally:
        app.close()


def _play(app: Any, call: Callable[..., Any], round_id: str) -> None:
    """Deal, then each player draws on taem 0-4 and stays on 5 or more; the house dealer likewise."""
    from pokdeng_core.round_state import BANKER

    call("deal", round_id)
    for _ in range(50):
        state = app.round_state(round_id)
        phase = state.phase.value
        if phase == "closed":
            return
        if phase == "player_turns":
            seat = state.turn
            taem = sum(card.points for card in state.cards(seat)) % 10
            call("draw" if taem <= 4 else "stay", round_id, seat, state.holder(seat))
        elif phase == "banker_turn":
            taem = sum(card.points for card in state.cards(BANKER)) % 10
            call("banker_draw" if taem <= 4 else "banker_stay", round_id, None)
        else:
            raise AssertionError(f"round {round_id} is {phase}")
    raise AssertionError(f"round {round_id} did not close")


def bundle_file_bytes(bundle: dict[str, Any]) -> bytes:
    from pokdeng_service.audit import bundle_bytes

    return bundle_bytes(bundle)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(HERE / "worked_round.json"))
    args = parser.parse_args(argv)
    raw = bundle_file_bytes(build())
    Path(args.output).write_bytes(raw)
    print(f"wrote {args.output} ({len(raw)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
