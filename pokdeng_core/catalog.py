"""What the engine is, without loading it: its version and the names of its rule profiles.

Constants only (no pydantic, no rules): ``pokdeng --version`` and ``--help`` read them and start at once.
``profiles`` re-exports both, and checks at import that its registry names exactly these profiles.
"""

from __future__ import annotations

ENGINE_VERSION = "1.1.0"
"""The engine that decides rounds. 1.1.0: client seeds contributed during betting and fixed at the deal
(docs/shuffle.md section 13); rounds of 1.0.0 took the client seed at the opening and replay as they were."""

PROFILE_NAMES = ("classic", "ante", "room", "kingmaker")
"""The rule profiles, in the order ``profiles.PRESETS`` registers them."""
