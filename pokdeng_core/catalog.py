"""What the engine is, without loading it: its version, its shuffle's algorithm and its rule profiles' names.

Constants only (no pydantic, no rules): ``pokdeng --version`` and ``--help`` read them and start at once.
``profiles`` re-exports the version and the names (and checks at import that its registry names exactly
these profiles); ``shuffle`` re-exports the algorithm.
"""

from __future__ import annotations

ENGINE_VERSION = "1.1.0"
"""The engine that decides rounds. 1.1.0: client seeds contributed during betting and fixed at the deal
(docs/shuffle.md section 13); rounds of 1.0.0 took the client seed at the opening and replay as they were."""

SHUFFLE_ALGORITHM = "pokdeng-shuffle-v1"
"""The seeded shuffle's version stamp (docs/shuffle.md); also the ASCII domain tag at the start of every HMAC
message (``shuffle``)."""

PROFILE_NAMES = ("classic", "ante", "room", "kingmaker")
"""The rule profiles, in the order ``profiles.PRESETS`` registers them."""
