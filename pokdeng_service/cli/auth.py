"""``pokdeng auth``: API tokens (``pokdeng_service.api.auth``).

* ``pokdeng auth new --role ROLE [--player ID] [--name LABEL] [--tokens FILE]``: a random token, printed once,
  and its entry for the token file; with ``--tokens``, the entry is added to that file (made with mode 0600 if
  it does not exist; one open to others is refused, exit 2).
* ``pokdeng auth hash``: the ``token_sha256`` of a token read from standard input.

Building the parser imports nothing of the server (the roles are named here; a test checks them against
``Role``); the command imports ``api.auth`` when it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

ROLES = ("operator", "player", "auditor")


def cmd_auth_new(args: argparse.Namespace) -> int:
    from pokdeng_service.api.auth import new_token

    return new_token(args.role, args.player, args.name, args.tokens)


def cmd_auth_hash(_args: argparse.Namespace) -> int:
    from pokdeng_service.api.auth import token_digest

    token = sys.stdin.readline().strip()
    if not token:  # (no token is no token's digest: bad usage)
        print(
            "pokdeng: no token on standard input: pipe the token in (echo TOKEN | pokdeng auth hash)", file=sys.stderr
        )
        return 2
    print(token_digest(token))
    return 0


def add_auth_commands(sub: Any) -> None:
    auth = sub.add_parser("auth", help="API tokens: make one (and add it to a token file), hash one")
    commands = auth.add_subparsers(dest="auth_command", required=True, metavar="COMMAND")
    new = commands.add_parser(
        "new",
        help="make a random token: printed once, with its entry for the token file (or added to it: --tokens)",
        description="Make a random API token. The token is printed once and never stored; the token file "
        "holds only its SHA-256 (docs/api.md, docs/operations.md).",
    )
    new.add_argument("--role", choices=ROLES, required=True, help="what the token may do")
    new.add_argument("--player", metavar="ID", help="the player id a player token is bound to")
    new.add_argument("--name", default="", help="a label for logs")
    new.add_argument(
        "--tokens", metavar="FILE", help="add the entry to this token file (JSON if .json, else TOML); "
        "made with mode 0600 if it does not exist; a server reads it at start (pokdeng serve --tokens FILE)",
    )  # fmt: skip
    new.set_defaults(handler=cmd_auth_new)
    digest = commands.add_parser(
        "hash", help="print the token_sha256 of a token read from standard input (none there: exit 2)"
    )
    digest.set_defaults(handler=cmd_auth_hash)
