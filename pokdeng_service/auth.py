"""The documented token tool: ``python -m pokdeng_service.auth new`` (``pokdeng_service.api.auth``)."""

import sys

from pokdeng_service.api.auth import Principal, Role, TokenStore, main, token_digest

__all__ = ["Principal", "Role", "TokenStore", "main", "token_digest"]

if __name__ == "__main__":
    sys.exit(main())
