"""The canonical JSON that chain digests and bundles are taken of is the standard library's form."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_service.store.codec import canonical_bytes, canonical_json, chain_digest

STDLIB = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

# What a payload may hold: text (any Unicode scalar value), integers of any size, booleans,
# null, arrays and text-keyed objects. Floats never occur in a digested payload.
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
scalars = st.none() | st.booleans() | st.integers() | st.integers(-(2**70), 2**70) | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_json_is_the_standard_librarys_sorted_compact_form(value: object) -> None:
    expected = STDLIB.encode(value)
    assert canonical_json(value) == expected
    assert canonical_bytes(value) == expected.encode()


def test_canonical_json_edges() -> None:
    for value in [
        {"b": 1, "a": [2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**64) - 1]},
        {"é": '\u2028\x7f\x00\x1f"\\', "A": True, "a": None},
        {"": {"z": [], "y": {}}},
    ]:
        assert canonical_json(value) == STDLIB.encode(value)


def test_chain_digest_is_documented_form() -> None:
    """SHA-256(previous ‖ 0x00 ‖ canonical JSON of {kind, data, position, command_id, timestamp})."""
    import hashlib

    previous = "ab" * 32
    data = {"seat": 1, "cards": ["AS", "10H"], "player": "ณัฐ"}
    body = STDLIB.encode(
        {
            "kind": "cards_dealt",
            "data": data,
            "position": 7,
            "command_id": "c-1",
            "timestamp": "2026-11-29T00:00:00+00:00",
        }
    )
    expected = hashlib.sha256(f"{previous}\x00{body}".encode()).hexdigest()
    assert chain_digest(previous, "cards_dealt", data, 7, "c-1", "2026-11-29T00:00:00+00:00") == expected
