"""Access control: bearer tokens in call metadata, mapped to roles.

* **operator**: everything (tables, rounds, wallets, reads, audit, the event feed).
* **player**: bound to one player id. It may take and leave its own seats, bid for
  banker, place its own bets and side bets, draw and stay on its own seats, act as
  banker in a round where it is the player-banker, read its own wallet and
  statement, read tables, read and audit rounds it takes part in (other hands'
  cards stay blank until they are shown), and ask what its seats may do.
* **auditor**: reads and verifies only (no command, no wallet change).

A call carries ``authorization: Bearer <token>``. No (or an unknown) token gives
UNAUTHENTICATED; a role that may not call the method, or a player acting for
someone else, gives PERMISSION_DENIED. Health needs no token; reflection needs a valid
token of any role, except in development mode (no token file).

Two layers: the one wrapper (``pokdeng_service.api.wrapper.wrap``) authenticates every call
once and checks the method's declared roles (deny by default: an undeclared method is not
served); the application then checks what only the record knows (which player, wallet or
round a command concerns) with the ``Principal`` it is handed.

Tokens come from configuration as SHA-256 digests, never in clear text: a JSON
or TOML file listing ``{token_sha256, role, player, name}``. Presented tokens are
hashed and compared with ``hmac.compare_digest`` against every entry. With no
file, development mode makes one random operator token and prints it once.
``pokdeng auth new --role player --player alice [--tokens FILE]`` (or ``python -m
pokdeng_service.auth new ...``) makes a token and the entry for the file, or adds it to the file.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import secrets
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pokdeng_service.api.errors import Unauthenticated
from pokdeng_service.application.principal import Principal, Role, TokenConfigError
from pokdeng_service.store.secret_files import SecretFileError, read_secret

__all__ = [
    "Authenticator",
    "Principal",
    "Role",
    "TokenConfigError",
    "TokenEntry",
    "TokenStore",
    "bearer_token",
    "token_digest",
]

MAX_TOKEN = 4096


def token_digest(token: str) -> str:
    """The SHA-256 (hex) under which a token is configured."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenEntry:
    token_sha256: str
    principal: Principal


class TokenStore:
    """The configured tokens, by digest. Only digests are kept (a development token also in clear, to print)."""

    def __init__(self, entries: Iterable[TokenEntry], development_token: str | None = None) -> None:
        self._entries = tuple(entries)
        digests = [e.token_sha256 for e in self._entries]
        for digest in digests:
            if len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest):
                raise TokenConfigError(f"token_sha256 must be 64 lowercase hex characters, not {digest!r}")
        if len(set(digests)) != len(digests):
            raise TokenConfigError("the same token is configured twice")
        self.development_token = development_token

    def __len__(self) -> int:
        return len(self._entries)

    @classmethod
    def from_mapping(cls, data: Any) -> TokenStore:
        """Entries from parsed configuration: ``{"tokens": [...]}`` or a bare list."""
        items = data.get("tokens") if isinstance(data, Mapping) else data
        if not isinstance(items, list) or not items:
            raise TokenConfigError('the token configuration needs a non-empty list "tokens"')
        entries = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise TokenConfigError(f"token entry {index} is not a table/object")
            unknown = set(item) - {"token_sha256", "role", "player", "name"}
            if unknown:
                raise TokenConfigError(f"token entry {index} has unknown keys: {', '.join(sorted(unknown))}")
            try:
                role = Role(str(item.get("role", "")))
            except ValueError:
                raise TokenConfigError(
                    f"token entry {index}: role must be operator, player or auditor, not {item.get('role')!r}"
                ) from None
            player = item.get("player") or None
            try:
                principal = Principal(role, str(player) if player else None, str(item.get("name", "")))
            except TokenConfigError as error:
                raise TokenConfigError(f"token entry {index}: {error}") from None
            entries.append(TokenEntry(str(item.get("token_sha256", "")).strip().lower(), principal))
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | Path) -> TokenStore:
        """A JSON (``.json``) or TOML (any other suffix) token file; one its group or others may access is
        refused (``store.secret_files``: it names every token's digest and role)."""
        file = Path(path)
        try:
            text = read_secret(file, "token file").decode("utf-8")
        except OSError as error:
            raise TokenConfigError(f"cannot read token file {file}: {error.strerror}") from None
        except SecretFileError as error:  # (the one rule of secret files: store/secret_files.py)
            raise TokenConfigError(str(error)) from None
        try:
            data = json.loads(text) if file.suffix.lower() == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as error:
            raise TokenConfigError(f"token file {file} is not valid {file.suffix or 'TOML'}: {error}") from None
        return cls.from_mapping(data)

    @classmethod
    def from_tokens(cls, tokens: Iterable[tuple[str, Role | str, str | None]]) -> TokenStore:
        """From clear-text tokens (tests, embedding): each ``(token, role, player)``; only digests are kept."""
        return cls(TokenEntry(token_digest(t), Principal(Role(r), p)) for t, r, p in tokens)

    @classmethod
    def development(cls, out: IO[str] | None = None, *, show: bool = True) -> TokenStore:
        """Development mode: one random operator token, printed once (to ``out``, default standard error)
        unless ``show`` is False, and kept as ``development_token``."""
        token = secrets.token_urlsafe(32)
        if show:
            print(
                "pokdeng: development mode (no token file): operator token, shown once:\n"
                f"  authorization: Bearer {token}",
                file=out or sys.stderr,
                flush=True,
            )
        return cls([TokenEntry(token_digest(token), Principal(Role.OPERATOR, name="development"))], token)

    def authenticate(self, token: str) -> Principal | None:
        """The principal a token stands for, or None. Compares against every entry in constant time."""
        if not token or len(token) > MAX_TOKEN:
            return None
        digest = token_digest(token).encode()
        found: Principal | None = None
        for entry in self._entries:
            if hmac.compare_digest(digest, entry.token_sha256.encode()):
                found = entry.principal
        return found


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The token of an ``authorization: Bearer <token>`` metadata entry, or None."""
    for key, value in metadata or ():
        if key.lower() != "authorization":
            continue
        text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
        return None
    return None


class Authenticator:
    """Turns call metadata into a ``Principal`` (the wrapper authenticates each call once with it)."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store

    def principal(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Principal:
        token = bearer_token(metadata)
        if token is None:
            raise Unauthenticated('no credentials: send the metadata "authorization: Bearer <token>"')
        principal = self.store.authenticate(token)
        if principal is None:
            raise Unauthenticated("the bearer token is not valid")
        return principal


# --- command line: make a token --------------------------------------------------------------


def _new_token(role: str, player: str | None, name: str) -> tuple[str, dict[str, str]]:
    token = secrets.token_urlsafe(32)
    Principal(Role(role), player, name)  # validates the combination
    entry = {"token_sha256": token_digest(token), "role": role}
    if player:
        entry["player"] = player
    if name:
        entry["name"] = name
    return token, entry


def add_to_token_file(path: str | Path, entry: Mapping[str, str]) -> None:
    """Add ``entry`` (``{token_sha256, role, player?, name?}``) to the token file ``path``, a JSON (``.json``)
    or TOML (any other suffix) file as ``TokenStore.from_file`` reads it. A file that does not exist is made,
    readable by its owner only (mode 0600); one that exists must already be private (``store.secret_files``:
    else ``TokenConfigError``, nothing written) and stay a valid token file with the entry (no token twice).
    The new file replaces the old at once (written beside it, then renamed), keeping its mode 0600."""
    file = Path(path)
    toml = file.suffix.lower() != ".json"
    if file.exists():
        try:
            text = read_secret(file, "token file").decode("utf-8")
        except OSError as error:
            raise TokenConfigError(f"cannot read token file {file}: {error.strerror}") from None
        except SecretFileError as error:
            raise TokenConfigError(str(error)) from None
        try:
            data = tomllib.loads(text) if toml else json.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as error:
            raise TokenConfigError(f"token file {file} is not valid {file.suffix or 'TOML'}: {error}") from None
    else:
        text, data = "", {"tokens": []}
    items = data.get("tokens") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise TokenConfigError(f'token file {file} has no list "tokens"')
    if toml:  # appended as a table of its own: the file's comments and layout stay as they are
        lines = ["[[tokens]]", *(f"{key} = {json.dumps(value)}" for key, value in entry.items())]
        new = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + "\n".join(lines)
        new += "\n"
    else:
        grown = [*items, dict(entry)]
        new = json.dumps({**data, "tokens": grown} if isinstance(data, Mapping) else grown, indent=2) + "\n"
    try:  # what the server will read: the old entries and the new one (no token twice)
        grown_store = TokenStore.from_mapping(tomllib.loads(new) if toml else json.loads(new))
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise TokenConfigError(f"token file {file} cannot take the entry: {error}") from None
    if len(grown_store) != len(items) + 1:
        raise TokenConfigError(f"token file {file} cannot take the entry: write its tokens as [[tokens]] tables")
    temporary = file.with_name(f".{file.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(new)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)  # (whatever the umask)
        os.replace(temporary, file)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def new_token(role: str, player: str | None, name: str, tokens: str | None, out: IO[str] | None = None) -> int:
    """``new``: a random token, printed once, and its entry: printed, or added to the token file ``tokens``.
    0, or 2 (a role and player that do not go together, a token file that cannot take the entry)."""
    out = out or sys.stdout
    try:
        token, entry = _new_token(role, player, name)
        if tokens:
            add_to_token_file(tokens, entry)
    except TokenConfigError as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # (a folder that does not exist, one not writable)
        print(f"pokdeng: cannot write token file {tokens}: {error.strerror or error}", file=sys.stderr)
        return 2
    print(f"token (give it to the client; it is not stored): {token}", file=out)
    if tokens:
        print(f"added to the token file {tokens}: {json.dumps(entry)}", file=out)
        print("a server reads its token file when it starts: restart it for the token to count", file=out)
    else:
        print(f"entry for the token file: {json.dumps(entry)}", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pokdeng_service.auth", description="Make pokdeng API tokens.")
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="make a random token; prints it once, and the entry for the token file")
    new.add_argument("--role", choices=[r.value for r in Role], required=True, help="what the token may do")
    new.add_argument("--player", help="the player id a player token is bound to")
    new.add_argument("--name", default="", help="a label for logs")
    new.add_argument("--tokens", metavar="FILE", help="add the entry to this token file (made with mode 0600)")
    digest = sub.add_parser("hash", help="the token_sha256 of a token read from standard input")
    digest.set_defaults(command="hash")
    args = parser.parse_args(argv)
    if args.command == "hash":
        print(token_digest(sys.stdin.readline().strip()))
        return 0
    return new_token(args.role, args.player, args.name, args.tokens)


if __name__ == "__main__":
    sys.exit(main())
