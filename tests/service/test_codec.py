"""The canonical JSON that chain digests and bundles are taken of is RFC 8785 (JCS), proved
against the ``rfc8785`` package; where no text goes beyond U+FFFF it is also the standard
library's sorted compact form."""

from __future__ import annotations

import json
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_service.store.codec import canonical_bytes, canonical_json, chain_digest

STDLIB = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
SAFE = 2**53 - 1  # amounts are capped here at the API: every integer JCS writes exactly

# What a payload may hold: text (any Unicode scalar value), integers of magnitude below 2^53,
# booleans, null, arrays and text-keyed objects. Floats never occur in a digested payload.
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
bmp_text = st.text(st.characters(exclude_categories=["Cs"], max_codepoint=0xFFFF), max_size=12)
scalars = st.none() | st.booleans() | st.integers(-SAFE, SAFE) | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)
bmp_values = st.recursive(
    st.none() | st.booleans() | st.integers(-SAFE, SAFE) | bmp_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(bmp_text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(values)
def test_canonical_json_is_rfc8785(value: Any) -> None:
    expected = rfc8785.dumps(value)
    assert canonical_bytes(value) == expected
    assert canonical_json(value) == expected.decode()


@settings(max_examples=300, deadline=None)
@given(bmp_values)
def test_within_the_bmp_it_is_also_the_standard_librarys_sorted_compact_form(value: object) -> None:
    assert canonical_json(value) == STDLIB.encode(value)


def test_canonical_json_edges() -> None:
    samples: list[Any] = [
        {"b": 1, "a": [SAFE, -SAFE, 0, -1]},
        {"é": '\u2028\x7f\x00\x1f"\\\b\f\n\r\t/', "A": True, "a": None},
        {"": {"z": [], "y": {}}},
        {"\U0001f600": 1, "\uffff": 2, "\ue000": 3},  # UTF-16 order: U+1F600 (D83D DE00), U+E000, U+FFFF
    ]
    for value in samples:
        assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_json({"\U0001f600": 1, "\uffff": 2, "\ue000": 3}) == '{"\U0001f600":1,"\ue000":3,"\uffff":2}'


def test_chain_digest_is_documented_form() -> None:
    """SHA-256(previous ‖ 0x00 ‖ canonical JSON of {kind, data, position, command_id, timestamp})."""
    import hashlib

    previous = "ab" * 32
    data: dict[str, Any] = {"seat": 1, "cards": ["AS", "10H"], "player": "ณัฐ"}
    body = rfc8785.dumps(
        {
            "kind": "cards_dealt",
            "data": data,
            "position": 7,
            "command_id": "c-1",
            "timestamp": "2026-11-29T00:00:00+00:00",
        }
    )
    expected = hashlib.sha256(previous.encode() + b"\x00" + body).hexdigest()
    assert chain_digest(previous, "cards_dealt", data, 7, "c-1", "2026-11-29T00:00:00+00:00") == expected
