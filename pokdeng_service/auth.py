"""The documented token tool: ``python -m pokdeng_service.auth new`` (``pokdeng_service.api.auth``)."""

import sys

from pokdeng_service.api.auth import (
    Authenticator,
    Principal,
    Role,
    TokenConfigError,
    TokenEntry,
    TokenStore,
    bearer_token,
    main,
    token_digest,
)
from pokdeng_service.api.methods import METHOD_ROLES

__all__ = [
    "METHOD_ROLES",
    "Authenticator",
    "Principal",
    "Role",
    "TokenConfigError",
    "TokenEntry",
    "TokenStore",
    "bearer_token",
    "main",
    "token_digest",
]

if __name__ == "__main__":
    sys.exit(main())
