"""Hub88's supplier wallet API as a transport of ``PlatformWallet`` (``--wallet hub88``, docs/wallet.md, "Hub88").

``PlatformWallet`` speaks protocol version 2 over it: a version 2 request (Debit, Credit, Rollback, Balance) becomes a
JSON POST to ``<base>/transaction/bet``, ``/transaction/win``, ``/transaction/rollback`` or ``/user/balance``, its body
signed (``X-Hub88-Signature``: base64 of the RSA PKCS#1 v1.5 SHA-256 signature of the raw body, pokdeng's key), and
Hub88's answer (verified with Hub88's public key when one is given) becomes a version 2 response, so the RemotePort,
the stakes step, the outbox, the recovery and the reconciliation are the same as on pokdeng's own protocol.

Ids: Hub88 wants UUIDs. A transaction's ``transaction_uuid`` is the UUID5 of its tx id (the same after a restart), and
its ``request_uuid`` the UUID5 of ``request:<tx id>``: every attempt of one transaction is the same request, so Hub88
answers a retry with the first answer (its request idempotency) and never applies it twice (its transaction
idempotency). Amounts: Hub88's integers are 1/100000 of the currency unit; pokdeng's minor units are multiplied by
``10 ** (5 - exponent)`` (ISO 4217), and an amount Hub88 gives back that is no whole number of minor units (or a
currency whose exponent is over 5) is refused rather than rounded (no answer: ``ValueError``).

What each RS_* status does (the table in docs/wallet.md). Hub88 answers a transaction_uuid sent again with the same
body as it did the first time; RS_ERROR_DUPLICATE_TRANSACTION means the same transaction_uuid with *another* body (a
reference, amount, currency, round, user or game that differ): not "already applied".

* bet: RS_OK applied; RS_ERROR_NOT_ENOUGH_MONEY insufficient funds, RS_ERROR_LIMIT_REACHED (and the bet limit)
  refused: nothing taken; every other status and no answer are *unknown outcomes*: Hub88's rule is that such a bet is
  rolled back, and so it is (the stakes step and the recovery roll back a debit without a definite answer);
* win: RS_OK applied; RS_ERROR_TRANSACTION_DOES_NOT_EXIST, RS_ERROR_DUPLICATE_TRANSACTION, RS_ERROR_WRONG_CURRENCY,
  RS_ERROR_USER_DISABLED, RS_ERROR_INVALID_GAME, RS_ERROR_INVALID_PARTNER refused (the player is owed it, until an
  operator resolves it); any other status is unknown: retried (Hub88's retry-on-win);
* rollback: RS_OK rolled back; RS_ERROR_TRANSACTION_DOES_NOT_EXIST done with nothing debited (the bet never arrived:
  a tombstone, the bet arriving later moves nothing); any other is retried;
* balance: RS_OK the balance; RS_ERROR_USER_DISABLED no such player;
* RS_ERROR_INVALID_TOKEN, RS_ERROR_TOKEN_EXPIRED on a bet or a balance: the player's session is refused
  (``SessionRefused``): the bet is rolled back as an unknown outcome, and the caller hears that the game must be
  launched again; on a win or a rollback (which Hub88 must process whatever the token's age) they are unknown:
  retried.

Sessions: every call is sent with the wallet session's ``token`` (``wallet.sessions``: Hub88's game session token of
the game's launch, handed to pokdeng with ``OpenWalletSession``) and its ``game_code``; a call without one is not
sent. The body has the fields of Hub88's Wallet API reference (``FIELDS``) and no other.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
import uuid
from typing import Any, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from google.protobuf.message import Message

from pokdeng_core.currencies import exponent
from pokdeng_service.wallet.sessions import SessionRefused
from pokdeng_service.wallet.signing import KeyFile, Signer
from pokdeng_service.wallet.v2 import wallet_pb2 as pb2

M = TypeVar("M", bound=Message)

HEADER = "X-Hub88-Signature"
SCALE = 5  # Hub88's amounts: integers in 1/100000 of the currency unit
NAMESPACE = uuid.UUID("6b1e5b0c-3f43-5b8e-9a57-6f6b64656e67")  # pokdeng's UUID5 namespace for Hub88's ids
PATHS = {
    "Debit": "/transaction/bet",
    "Credit": "/transaction/win",
    "Rollback": "/transaction/rollback",
    "Balance": "/user/balance",
}

BET_REFUSED = {"RS_ERROR_LIMIT_REACHED", "RS_ERROR_BET_LIMIT_REACHED"}  # (Hub88: not rolled back)
WIN_REFUSED = {
    "RS_ERROR_TRANSACTION_DOES_NOT_EXIST", "RS_ERROR_DUPLICATE_TRANSACTION", "RS_ERROR_WRONG_CURRENCY",
    "RS_ERROR_USER_DISABLED", "RS_ERROR_INVALID_GAME", "RS_ERROR_INVALID_PARTNER",
}  # fmt: skip
SESSION_REFUSED = {"RS_ERROR_INVALID_TOKEN", "RS_ERROR_TOKEN_EXPIRED"}  # (bet, balance: the session is not usable)
FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "/user/balance": (frozenset({"token", "request_uuid", "game_code"}), frozenset({"supplier_user"})),
    "/transaction/bet": (
        frozenset({"user", "transaction_uuid", "supplier_transaction_id", "token", "round", "request_uuid",
                   "game_code", "currency", "amount"}),
        frozenset({"supplier_user", "round_closed", "reward_uuid", "is_free", "is_aggregated", "bet", "meta",
                   "jackpot_contribution"}),
    ),
    "/transaction/win": (
        frozenset({"user", "transaction_uuid", "supplier_transaction_id", "token", "round", "request_uuid",
                   "reference_transaction_uuid", "game_code", "currency", "amount"}),
        frozenset({"supplier_user", "round_closed", "reward_uuid", "is_free", "is_supplier_promo", "bet", "meta"}),
    ),
    "/transaction/rollback": (
        frozenset({"user", "transaction_uuid", "supplier_transaction_id", "token", "round", "request_uuid",
                   "reference_transaction_uuid", "game_code"}),
        frozenset({"supplier_user", "round_closed", "meta"}),
    ),
}  # fmt: skip
"""Per path, the request's (required, optional) fields, as Hub88's Wallet API reference (Supplier API) lists them."""


class Hub88Error(ValueError):
    """An answer pokdeng cannot take as definite (a ``ValueError``: the call's outcome is unknown)."""


def transaction_uuid(tx_id: str) -> str:
    """Hub88's ``transaction_uuid`` of pokdeng's tx id (UUID5: the same in every process)."""
    return str(uuid.uuid5(NAMESPACE, tx_id))


def request_uuid(tx_id: str) -> str:
    """The ``request_uuid`` of every attempt of one transaction (Hub88 answers a repeated request as the first)."""
    return str(uuid.uuid5(NAMESPACE, f"request:{tx_id}"))


def to_hub88(amount: int, currency: str) -> int:
    """pokdeng's minor units of ``currency`` in Hub88's units (``ValueError`` if they do not convert exactly)."""
    digits = exponent(currency)
    if digits > SCALE:
        raise ValueError(f"{currency}'s minor unit (10^-{digits}) is finer than Hub88's 10^-{SCALE}")
    return int(amount) * int(10 ** (SCALE - digits))


def from_hub88(amount: int, currency: str) -> int:
    """Hub88's units in pokdeng's minor units of ``currency`` (``Hub88Error`` unless a whole number of them)."""
    digits = exponent(currency)
    if digits > SCALE:
        raise Hub88Error(f"{currency}'s minor unit is finer than Hub88's")
    minor, rest = divmod(int(amount), int(10 ** (SCALE - digits)))
    if rest:
        raise Hub88Error(f"Hub88's amount {amount} is no whole number of {currency}'s minor units")
    return minor


def sign(key: rsa.RSAPrivateKey, body: bytes) -> str:
    """``X-Hub88-Signature``: base64 of the RSA PKCS#1 v1.5 SHA-256 signature of the raw body."""
    return base64.b64encode(key.sign(body, padding.PKCS1v15(), hashes.SHA256())).decode()


def verified(keys: list[rsa.RSAPublicKey], value: str | None, body: bytes) -> bool:
    """The body is signed (``value``, base64) by one of ``keys``."""
    if not value:
        return False
    try:
        signature = base64.b64decode(value, validate=True)
    except ValueError:
        return False
    for key in keys:
        try:
            key.verify(signature, body, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            continue
        return True
    return False


class Hub88Transport:
    """``PlatformWallet``'s transport (protocol 2 requests) to Hub88's supplier wallet API at ``base_url``.

    ``sign_key``: pokdeng's RSA private key (a secret file, re-read when it changes); ``hub88_keys``: a file of Hub88's
    public keys (PEM), its answers verified (an unsigned or wrongly signed answer is an unknown outcome); ``ca``: the CA
    file verifying Hub88's certificate over https (else the system's trust store)."""

    def __init__(self, base_url: str, sign_key: str, hub88_keys: str = "", ca: str = "") -> None:
        self.base = base_url.rstrip("/")
        self.signer = Signer(sign_key)
        if not isinstance(self.signer.current(), rsa.RSAPrivateKey):
            raise ValueError(f"Hub88 signs with RSA: {sign_key} is not an RSA private key")
        self.answers = KeyFile(hub88_keys) if hub88_keys else None
        if self.answers is not None and not self._hub88_keys():
            raise ValueError(f"{hub88_keys} holds no RSA public key of Hub88's")
        self.context = ssl.create_default_context(cafile=ca or None) if self.base.startswith("https://") else None

    def _hub88_keys(self) -> list[rsa.RSAPublicKey]:
        assert self.answers is not None
        return [k for k in self.answers.keys().values() if isinstance(k, rsa.RSAPublicKey)]

    def body(self, method: str, request: Any, token: str) -> dict[str, Any]:
        """The Hub88 request of a version 2 request, sent with the wallet session's ``token`` (``ValueError``: an
        amount that does not convert). Only the fields of Hub88's schema (``FIELDS``): ``/user/balance`` names its
        user by the token alone; a rollback names its bet, not an amount."""
        if method == "Balance":
            return {"token": token, "request_uuid": str(uuid.uuid4()), "game_code": request.game_code}
        body: dict[str, Any] = {
            "user": request.player,
            "transaction_uuid": transaction_uuid(request.tx_id),
            "supplier_transaction_id": request.tx_id,
            "token": token,
            "round": request.round_id,
            "round_closed": bool(request.round_closed),
            "request_uuid": request_uuid(request.tx_id),
            "game_code": request.game_code,
        }
        if method == "Rollback":
            body["reference_transaction_uuid"] = transaction_uuid(request.original_tx_id)
            return body
        currency = request.currency
        body.update(is_free=False, currency=currency, amount=to_hub88(request.amount, currency))
        if method == "Debit":
            body["bet"] = request.purpose or "bet"
        else:
            debits = list(request.debit_tx_ids)
            body["reference_transaction_uuid"] = transaction_uuid(debits[0]) if debits else ""
        return body

    def call(self, method: str, request: Message, response_type: type[M], timeout: float, token: str = "") -> M:
        if method not in PATHS:
            raise Hub88Error(f"Hub88's wallet API has no {method} (docs/wallet.md, Hub88: reconciliation)")
        if not token:
            raise Hub88Error(f"{PATHS[method]}: no wallet session token (the player's session was not handed over)")
        sent: Any = request
        payload = self.body(method, sent, token)
        raw_body = json.dumps(payload, separators=(",", ":")).encode()
        key = self.signer.current()
        assert isinstance(key, rsa.RSAPrivateKey)
        headers = {"Content-Type": "application/json", HEADER: sign(key, raw_body)}
        http = urllib.request.Request(f"{self.base}{PATHS[method]}", data=raw_body, headers=headers, method="POST")
        with urllib.request.urlopen(http, timeout=timeout, context=self.context) as reply:
            if reply.status != 200:
                raise OSError(f"HTTP {reply.status}")
            raw = reply.read()
            if self.answers is not None and not verified(self._hub88_keys(), reply.headers.get(HEADER), raw):
                raise Hub88Error("Hub88's answer is not signed by its key")
        answer = json.loads(raw)
        if not isinstance(answer, dict) or answer.get("request_uuid") != payload["request_uuid"]:
            raise Hub88Error("an answer to another request")
        if answer.get("user") not in (None, sent.player):
            raise Hub88Error(f"an answer about another user ({answer.get('user')!r})")
        response: Any = response_type()
        response.request_id = sent.request_id
        _translate(method, sent, answer, response)
        result: M = response
        return result

    def close(self) -> None:
        pass


def _translate(method: str, request: Any, answer: dict[str, Any], response: Any) -> None:
    """Hub88's answer as a version 2 response (``Hub88Error``: an unknown outcome)."""
    status = str(answer.get("status", ""))
    currency = str(answer.get("currency") or request.currency)
    if method in ("Debit", "Balance") and status in SESSION_REFUSED:
        raise SessionRefused(status)  # (a bet so answered is rolled back, as any bet without RS_OK)
    if method == "Balance":
        response.player = request.player
        if status == "RS_OK":
            response.status, response.currency = pb2.STATUS_APPLIED, currency
            response.balance = from_hub88(int(answer.get("balance", 0)), currency)
        elif status == "RS_ERROR_USER_DISABLED":
            response.status = pb2.STATUS_UNKNOWN_PLAYER
        else:
            raise Hub88Error(f"balance: {status or 'no status'}")
        return
    response.tx_id = request.tx_id
    response.currency = currency
    response.platform_ref = str(answer.get("transaction_uuid") or transaction_uuid(request.tx_id))
    response.reason = "" if status == "RS_OK" else status
    if status == "RS_OK":
        response.status = pb2.STATUS_APPLIED
        response.debited = method == "Rollback"
    elif method == "Debit" and status == "RS_ERROR_NOT_ENOUGH_MONEY":
        response.status = pb2.STATUS_INSUFFICIENT_FUNDS
    elif status in {"Debit": BET_REFUSED, "Credit": WIN_REFUSED}.get(method, set()):
        response.status = pb2.STATUS_REFUSED
    elif method == "Rollback" and status == "RS_ERROR_TRANSACTION_DOES_NOT_EXIST":
        response.status = pb2.STATUS_BET_NOT_FOUND
    else:
        raise Hub88Error(f"{PATHS[method]}: {status or 'no status'} (an unknown outcome)")
    if "balance" in answer:
        response.balance = from_hub88(int(answer["balance"]), currency)


__all__ = [
    "FIELDS",
    "HEADER",
    "Hub88Error",
    "Hub88Transport",
    "from_hub88",
    "request_uuid",
    "sign",
    "to_hub88",
    "transaction_uuid",
    "verified",
]
