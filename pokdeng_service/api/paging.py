"""Page tokens (AIP-158): opaque to clients, checked by the server.

A token is the URL-safe base64 of canonical JSON ``{"m": method, "f": filter digest, "c": cursor}``.
The cursor says where the next page starts (a key or position); the filter digest ties the token
to the request's filter, so a token is refused (INVALID_ARGUMENT on ``page_token``) when it is
malformed, comes from another method, or is sent with another filter. A token grants nothing: the
caller's permissions are checked on every page as on the first.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pokdeng_core.limits import MAX_ID, MAX_POSITION
from pokdeng_service.application.errors import FieldViolation, RequestInvalid

MAX_TOKEN = 1024  # characters


def _digest(filters: Mapping[str, Any]) -> str:
    text = json.dumps(dict(filters), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def encode(method: str, filters: Mapping[str, Any], cursor: Any) -> str:
    body = json.dumps({"m": method, "f": _digest(filters), "c": cursor}, sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode("utf-8")).decode("ascii").rstrip("=")


def decode(method: str, filters: Mapping[str, Any], token: str, field: str = "page_token") -> Any:
    """The cursor of ``token`` (None for an empty token: the first page); ``field`` names the request's
    field in a refusal (``resume_token`` for the watch streams)."""
    if not token:
        return None
    problem = f"{field} is not a token this method returned for this request"
    if len(token) > MAX_TOKEN:
        raise RequestInvalid([FieldViolation(field, problem)])
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise RequestInvalid([FieldViolation(field, problem)]) from None
    if not isinstance(body, dict) or body.get("m") != method or body.get("f") != _digest(filters):
        raise RequestInvalid([FieldViolation(field, problem)])
    return body.get("c")


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
