"""A token file for ``pokdeng serve --tokens``: an operator, an auditor and one token per player.

Only SHA-256 digests go into the file (``pokdeng_service.auth`` format); the clear tokens stay in
the ``Tokens`` object, for the clients of this process.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pokdeng_service.auth import TokenStore, token_digest


@dataclass
class Tokens:
    operator: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    auditor: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    players: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_players(cls, players: Iterable[str]) -> Tokens:
        return cls(players={p: secrets.token_urlsafe(24) for p in players})

    def entries(self) -> list[dict[str, str]]:
        out = [
            {"token_sha256": token_digest(self.operator), "role": "operator", "name": "harness operator"},
            {"token_sha256": token_digest(self.auditor), "role": "auditor", "name": "harness auditor"},
        ]
        for player, token in sorted(self.players.items()):
            out.append({"token_sha256": token_digest(token), "role": "player", "player": player})
        return out

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"tokens": self.entries()}, indent=1), encoding="utf-8")
        path.chmod(0o600)
        TokenStore.from_file(path)  # the server will accept it
        return path
