"""The Merkle verifiers against transparency-dev/merkle's published probes, and RFC 9162's edge cases.

transparency-dev/merkle (Apache-2.0) publishes, for other languages, JSON probe files of inclusion and
consistency proofs (its ``testdata/inclusion`` and ``testdata/consistency``): a happy path for several
trees of the RFC 6962 test leaves, and for each a set of mutations (a bit flipped in a proof node, a
node added or removed, garbage before or after, the size doubled or halved, the index moved, roots
swapped, zero sizes, empty and short hashes), each with the answer a verifier must give (``wantErr``).
Both of our verifiers, the service's (``store/merkle.py``) and the documentation's reference verifier
(docs/examples/worked_round.py), must give that answer for every probe.

The probe files are not in this repository (the project commits no copy of another project's files):
the test reads them from ``$POKDENG_MERKLE_PROBES``, or from ``transparency-dev-merkle`` in the
workplace's ``shared/`` folder beside the repository, a directory holding ``testdata/inclusion`` and
``testdata/consistency`` as the upstream repository lays them out (with its LICENSE). Without them the
probe tests are skipped, saying where they are looked for. The edge cases below (RFC 9162: 0 < m <= n;
hashes of 32 bytes) run always.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pokdeng_service.store import merkle

ROOT = Path(__file__).resolve().parents[2]
PROBES_ENV = "POKDENG_MERKLE_PROBES"
SHARED_PROBES = ROOT.parent / "shared" / "transparency-dev-merkle"
SCRIPT = ROOT / "docs" / "examples" / "worked_round.py"
INCLUSION_FIELDS = {"leafIdx", "treeSize", "root", "leafHash", "proof", "desc", "wantErr"}
CONSISTENCY_FIELDS = {"size1", "size2", "root1", "root2", "proof", "desc", "wantErr"}


def _probe_dir() -> Path | None:
    configured = os.environ.get(PROBES_ENV, "")
    for base in [Path(configured)] if configured else [SHARED_PROBES]:
        for candidate in (base / "testdata", base):
            if (candidate / "inclusion").is_dir() and (candidate / "consistency").is_dir():
                return candidate
    return None


def _probes(kind: str) -> list[Any]:
    found = _probe_dir()
    if found is None:
        return [
            pytest.param(
                None,
                id=f"{kind}-probes-absent",
                marks=pytest.mark.skip(
                    reason=f"transparency-dev/merkle's probe files are not here: set {PROBES_ENV} to a directory "
                    f"holding testdata/{kind} (the upstream layout), or place it at {SHARED_PROBES}"
                ),
            )
        ]
    files = sorted((found / kind).rglob("*.json"))
    return [pytest.param(path, id=str(path.relative_to(found / kind))) for path in files]


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _b64(text: str | None) -> bytes:
    return base64.b64decode(text or "", validate=True)


def _hashes(items: list[str] | None) -> list[bytes]:
    return [_b64(item) for item in items or []]


@pytest.fixture(scope="module")
def wr() -> ModuleType:
    """The documentation's reference verifier, imported from its file (it imports nothing of pokdeng)."""
    spec = importlib.util.spec_from_file_location("worked_round_probes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["worked_round_probes"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", _probes("inclusion"))
def test_inclusion_probes(path: Path, wr: ModuleType) -> None:
    probe = _load(path)
    assert set(probe) == INCLUSION_FIELDS, path
    args = (_b64(probe["leafHash"]), probe["leafIdx"], probe["treeSize"], _hashes(probe["proof"]), _b64(probe["root"]))
    want = not probe["wantErr"]
    assert merkle.verify_inclusion(*args) is want, probe["desc"]
    assert wr.verify_inclusion(*args) is want, probe["desc"]


@pytest.mark.parametrize("path", _probes("consistency"))
def test_consistency_probes(path: Path, wr: ModuleType) -> None:
    probe = _load(path)
    assert set(probe) == CONSISTENCY_FIELDS, path
    args = (probe["size1"], probe["size2"], _b64(probe["root1"]), _b64(probe["root2"]), _hashes(probe["proof"]))
    want = not probe["wantErr"]
    assert merkle.verify_consistency(*args) is want, probe["desc"]
    assert wr.verify_consistency(*args) is want, probe["desc"]


def test_the_probes_cover_every_happy_path_and_its_mutations() -> None:
    """Where the probes are found, there are enough of them that a partial copy would not pass for the whole."""
    found = _probe_dir()
    if found is None:
        pytest.skip(f"transparency-dev/merkle's probe files are not here ({PROBES_ENV}, or {SHARED_PROBES})")
    for kind, least in (("inclusion", 90), ("consistency", 90)):
        files = list((found / kind).rglob("*.json"))
        happy = [f for f in files if f.name == "happy-path.json"]
        assert len(files) >= least and len(happy) >= 5, (kind, len(files), len(happy))
        assert any(not _load(f)["wantErr"] for f in files) and any(_load(f)["wantErr"] for f in files)


# --- RFC 9162's edge cases, always --------------------------------------------------------------


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


LEAVES = [_h(b"\x00" + bytes([i])) for i in range(7)]


@pytest.mark.parametrize("verify", ["service", "docs"])
def test_edge_cases(verify: str, wr: ModuleType) -> None:
    inclusion = merkle.verify_inclusion if verify == "service" else wr.verify_inclusion
    consistency = merkle.verify_consistency if verify == "service" else wr.verify_consistency
    root7, root4 = merkle.root(LEAVES), merkle.root(LEAVES[:4])
    path = merkle.inclusion_proof(LEAVES, 5)
    assert inclusion(LEAVES[5], 5, 7, path, root7)
    assert not inclusion(LEAVES[5], 7, 7, path, root7)  # index == size
    assert not inclusion(LEAVES[5], -1, 7, path, root7)
    assert not inclusion(LEAVES[5], 0, 0, [], merkle.EMPTY_ROOT)  # nothing is in the empty tree
    assert not inclusion(LEAVES[5][:31], 5, 7, path, root7)  # a leaf hash of 31 bytes
    assert not inclusion(LEAVES[5] + b"\x00", 5, 7, path, root7)
    assert not inclusion(LEAVES[5], 5, 7, path, root7 + b"\x00")  # a root of 33 bytes
    assert not inclusion(LEAVES[5], 5, 7, [path[0][:16], *path[1:]], root7)  # a proof node of 16 bytes
    assert inclusion(LEAVES[0], 0, 1, [], LEAVES[0]) and not inclusion(b"", 0, 1, [], b"")

    proof = merkle.consistency_proof(LEAVES, 4)
    assert consistency(4, 7, root4, root7, proof)
    assert consistency(7, 7, root7, root7, [])  # m == n: an empty proof, equal roots
    assert not consistency(7, 7, root7, root7, [root7])  # m == n with a proof
    assert not consistency(7, 7, root7, root4, [])
    assert not consistency(0, 7, merkle.EMPTY_ROOT, root7, [])  # from the empty tree: refused (0 < m)
    assert not consistency(0, 0, merkle.EMPTY_ROOT, merkle.EMPTY_ROOT, [])
    assert not consistency(7, 4, root7, root4, proof)  # m > n
    assert not consistency(4, 7, root4[:31], root7, proof)
    assert not consistency(4, 7, root4, root7, [node + b"\x00" for node in proof])


def test_no_proof_is_made_from_the_empty_tree() -> None:
    with pytest.raises(ValueError, match="empty tree"):
        merkle.consistency_proof(LEAVES, 0)
    assert merkle.consistency_proof(LEAVES, 7) == []
