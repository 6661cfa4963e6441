"""The seed schedule of the RNG report (docs/certification.md, "The seed schedule").

Shoe ``i`` (``i = 0, 1, 2, ...``) of a report with report seed ``S`` and ``D`` decks is shuffled by
``pokdeng-shuffle-v1`` (docs/shuffle.md) from

* server seed ``SHA-256(UTF-8(S) || i as 8 bytes, unsigned big-endian)`` (32 bytes; the schedule of
  ``pokdeng simulate``, ``gamemath.round_server_seed``),
* client seed ``"pokdeng-certification/D-deck"`` (ASCII; e.g. ``pokdeng-certification/8-deck``): one
  deck count's shoes never read another's streams,
* nonce ``i``.

The battery's byte stream is, for ``i = 0, 1, 2, ...`` in turn, blocks ``0 .. 51`` (1,664 bytes) of the
HMAC stream of eight-deck shoe ``i``: the blocks an eight-deck shuffle reads (415 draws, 52 blocks,
when nothing is rejected), concatenated as they come.
"""

from __future__ import annotations

import hashlib

__all__ = ("BATTERY_BLOCKS", "BATTERY_DECKS", "client_seed", "server_seed", "server_seeds")

BATTERY_DECKS = 8
BATTERY_BLOCKS = 52  # blocks of each shoe's stream in the battery's byte stream (32 bytes each)


def client_seed(decks: int) -> str:
    """The client seed of every shoe of ``decks`` decks."""
    return f"pokdeng-certification/{decks}-deck"


def server_seed(report_seed: str, index: int) -> bytes:
    """The server seed of shoe ``index``: SHA-256(UTF-8(report seed) || index as 8 bytes big-endian)."""
    return hashlib.sha256(report_seed.encode("utf-8") + index.to_bytes(8, "big")).digest()


def server_seeds(report_seed: str, start: int, count: int) -> list[bytes]:
    """The server seeds of shoes ``start .. start + count - 1``."""
    base = hashlib.sha256(report_seed.encode("utf-8"))
    out = []
    for index in range(start, start + count):
        h = base.copy()
        h.update(index.to_bytes(8, "big"))
        out.append(h.digest())
    return out
