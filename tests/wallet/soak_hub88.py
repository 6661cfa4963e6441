"""The soak on the reference Hub88 (``SoakConfig(wallet="hub88")``): ``pokdeng serve --wallet hub88`` SIGKILLed inside
its wallet calls, as on pokdeng's own protocol (``soak.Soak``), with what Hub88 asks on:

* HTTPS: the reference Hub88 serves TLS with the test CA's certificate, which pokdeng verifies (``--wallet-tls-ca``);
* signatures both ways: pokdeng's RSA key signs every request (``--wallet-hub88-key``; the reference refuses an
  unsigned or wrongly signed one, and counts it), Hub88's key every answer (``--wallet-hub88-public-keys``);
* sessions: every player's (and dealer's) game is launched on Hub88 (a token) and its session handed to pokdeng over
  gRPC (``WalletService/OpenWalletSession``) before play; a bet, and its win or rollback after a restart, must reach
  Hub88 with that token (the reference refuses an unknown one), and every body must be of Hub88's schema. Before
  that, a stake of a player without a session is refused over gRPC (``WALLET_SESSION_MISSING``), Hub88 not called.

The checks are the soak's (the reconciliation against the reference's ledger, every balance to the minor unit,
``pokdeng verify --all``), and from Hub88's record: no bet won twice, no transaction without pokdeng's record, no
transaction after its round's ``round_closed`` (and some round closed so), no request refused for its signature,
schema or token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from .hub88_server import Hub88Ledger, serve
from .pki import make_pki, public_pem, signing_key, write_private
from .soak import Soak
from .soak_client import ROUNDS, WALLETS, Refused

REFUSALS = (
    "RS_ERROR_INVALID_SIGNATURE", "RS_ERROR_WRONG_SYNTAX", "RS_ERROR_WRONG_TYPES", "RS_ERROR_INVALID_TOKEN",
    "RS_ERROR_TOKEN_EXPIRED",
)  # fmt: skip
"""What the reference Hub88 must never have answered pokdeng in a soak."""


class Hub88Soak(Soak):
    def make_ledger(self) -> Any:
        return Hub88Ledger()

    def start_platform(self) -> tuple[str, Callable[[], None]]:
        pki = make_pki(self.folder / "pki")
        ours, hub88 = signing_key("rsa"), signing_key("rsa")
        assert isinstance(ours, rsa.RSAPrivateKey) and isinstance(hub88, rsa.RSAPrivateKey)
        key_file = write_private(self.folder / "pokdeng-hub88.key", ours)
        public = self.folder / "hub88-public.pem"
        public.write_bytes(public_pem(hub88.public_key()))
        server = serve(self.ledger, ours.public_key(), hub88, self.faults, (pki.server_cert, pki.server_key))
        self.wallet_options = {"hub88_key": str(key_file), "hub88_public_keys": str(public), "tls_ca": str(pki.ca)}
        return server.url, server.stop

    def open_sessions(self) -> None:
        """Every player's game launched and its session handed over; first, a stake without one, refused over gRPC
        before any call to Hub88 (its round is then played as any)."""
        client = self.client()
        try:
            table = self.tables[0]
            round_id = client.call(ROUNDS, "StartRound", request_id="sessionless:start", table_id=table.table_id)
            calls = sum(self.ledger.calls.values())
            try:
                client.call(
                    ROUNDS, "PlaceBet", request_id="sessionless:bet", round_id=round_id.round.round_id, seat=1,
                    player=table.players[0], stake=100,
                )  # fmt: skip
                self.report.problems.append("a stake without a wallet session was placed")
            except Refused as refused:
                if refused.reason != "WALLET_SESSION_MISSING" or sum(self.ledger.calls.values()) != calls:
                    self.report.problems.append(f"a stake without a wallet session: {refused}, or Hub88 was called")
            for player in self.initial:
                token = self.ledger.launch(player, "THB", "pokdeng")
                client.call(
                    WALLETS, "OpenWalletSession", request_id=f"session:{player}", player=player, token=token,
                    currency_code="THB", game_code="pokdeng",
                )  # fmt: skip
        finally:
            client.close()

    def platform_record(self, url: str) -> Any:
        return self.ledger  # (Hub88 lists no transactions to a supplier: its record is read from the reference)

    def platform_problems(self, ours: dict[str, Any]) -> list[str]:
        ledger: Hub88Ledger = self.ledger
        problems = []
        wins = Counter(tx.reference for tx in ledger.txs.values() if tx.kind == "win")
        problems += [f"a bet won twice: {bet}" for bet, count in wins.items() if count > 1]
        unknown = [tx.supplier_id for tx in ledger.txs.values() if tx.supplier_id.removesuffix(":rollback") not in ours]
        problems += [f"a Hub88 transaction without pokdeng's record: {tx}" for tx in unknown]
        refused = {status: ledger.refused[status] for status in REFUSALS if ledger.refused[status]}
        if refused:
            problems.append(f"the reference Hub88 refused pokdeng's requests: {refused}")
        if ledger.after_close:
            problems.append(f"transactions after their round's round_closed: {ledger.after_close[:5]}")
        if not any(tx.round_closed for tx in ledger.txs.values()):
            problems.append("no round_closed transaction reached Hub88")
        if not {tx.token for tx in ledger.txs.values()} <= set(ledger.tokens):
            problems.append("a transaction reached Hub88 with a token it did not issue")
        return problems


__all__ = ["REFUSALS", "Hub88Soak"]
