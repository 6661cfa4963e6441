"""Page and resume tokens (AIP-158): opaque to clients, made and checked by the server.

A token is the URL-safe base64 of canonical JSON ``{"m": method, "f": filter digest, "c": cursor}``,
a ``.``, and the URL-safe base64 of the first 16 bytes of its HMAC-SHA256 under the server's token
key (``SeedVault.token_key``, derived from the vault key: every replica accepts every other's
tokens). The cursor says where the next page starts (a key or position); the filter digest ties the
token to the request's filter. A token is refused (INVALID_ARGUMENT on ``page_token``, or
``resume_token``) when it is malformed, was not made by this service (an edited cursor included),
comes from another method, or is sent with another filter. A token grants nothing: the caller's
permissions are checked on every page as on the first.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from pokdeng_core.limits import MAX_ID, MAX_POSITION
from pokdeng_service.application.errors import FieldViolation, RequestInvalid

MAX_TOKEN = 1024  # characters


def _digest(filters: Mapping[str, Any]) -> str:
    text = json.dumps(dict(filters), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _mac(key: bytes, body: str) -> str:
    return _b64(hmac.new(key, body.encode("ascii"), hashlib.sha256).digest()[:16])


def encode(method: str, filters: Mapping[str, Any], cursor: Any, key: bytes) -> str:
    """The token of ``cursor`` for ``method`` and ``filters``, authenticated with ``key``."""
    text = json.dumps({"m": method, "f": _digest(filters), "c": cursor}, sort_keys=True, separators=(",", ":"))
    body = _b64(text.encode("utf-8"))
    return f"{body}.{_mac(key, body)}"


def decode(method: str, filters: Mapping[str, Any], token: str, key: bytes, field: str = "page_token") -> Any:
    """The cursor of ``token`` (None for an empty token: the first page); ``field`` names the request's
    field in a refusal (``resume_token`` for the watch streams)."""
    if not token:
        return None
    problem = f"{field} is not a token this method returned for this request"
    body, dot, mac = token.rpartition(".")
    if len(token) > MAX_TOKEN or not dot or not token.isascii() or not hmac.compare_digest(mac, _mac(key, body)):
        raise RequestInvalid([FieldViolation(field, problem)])
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise RequestInvalid([FieldViolation(field, problem)]) from None
    if not isinstance(data, dict) or data.get("m") != method or data.get("f") != _digest(filters) or "c" not in data:
        raise RequestInvalid([FieldViolation(field, problem)])
    return data["c"]


def key_cursor(value: Any, field: str = "page_token") -> str:
    """A cursor that must be an id (the last id of the page before)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID:
        raise RequestInvalid([FieldViolation(field, f"{field} is malformed")])
    return value


def int_cursor(value: Any, field: str = "page_token") -> int:
    """A cursor that must be a non-negative integer (a position: at most int64's largest)."""
    if type(value) is not int or not 0 <= value < MAX_POSITION:
        raise RequestInvalid([FieldViolation(field, f"{field} is malformed")])
    return value
