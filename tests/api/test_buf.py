"""The API's .proto files against buf: the checks themselves run in the gates, here what makes them trustworthy.

``python -m nox -s gates`` runs ``buf lint proto`` (``proto/buf.yaml``: the STANDARD rules, no exceptions) and
``buf breaking proto --against proto/baseline/pokdeng-v1.binpb`` (FILE rules): the baseline is a buf image of
the published API; within v1 the API only grows (proto/README.md says when the baseline may be rebuilt).
Here:

* the buf is the pinned one;
* two controls show that both checks can fail: a copy of proto/ with a removed field breaks, one with a badly
  named message does not lint;
* the baseline image is read without buf too: it holds both packages, and every service, method and field
  number it publishes is still in the generated descriptors.

buf is the npm package pinned in ``tests/node/package.json`` (``tests/node/packages.py`` installs
it); without node/npm it is skipped, except under ``CI=true``. The packaged copy
``pokdeng_client/pokdeng.proto`` is checked against proto/ in tests/test_wheel.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from pokdeng_client.v1 import pokdeng_pb2 as pb
from tests.node.packages import install, unavailable

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto"
BASELINE = PROTO / "baseline" / "pokdeng-v1.binpb"
API_PROTO = "pokdeng/v1/pokdeng.proto"
WALLET_PROTO = "pokdeng/wallet/v1/wallet.proto"


@pytest.fixture(scope="module")
def buf() -> list[str]:
    """The pinned buf's command line."""
    path = install().buf
    if not path.exists():
        unavailable(f"buf not found at {path} after `npm ci` in tests/node")
    return [str(path)]


def run(buf: list[str], *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BUF_CACHE_DIR": str(cache)}
    return subprocess.run([*buf, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """buf's cache, a temporary folder (nothing written under the home directory)."""
    return tmp_path_factory.mktemp("buf-cache")


def copy_of_proto(folder: Path) -> Path:
    """proto/ without its baseline, to edit."""
    target = folder / "proto"
    shutil.copytree(PROTO, target, ignore=shutil.ignore_patterns("baseline", "*.md"))
    return target


@pytest.mark.node
def test_buf_is_the_pinned_version(buf: list[str], cache: Path) -> None:
    version = run(buf, "--version", cache=cache)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "1.75.0"


@pytest.mark.node
def test_buf_breaking_catches_a_removed_field(buf: list[str], cache: Path, tmp_path: Path) -> None:
    edited = copy_of_proto(tmp_path)
    api = edited / API_PROTO
    text = api.read_text(encoding="utf-8")
    field = "  string currency_code = 3;\n"  # OpenWalletRequest's only
    assert text.count(field) == 1
    api.write_text(text.replace(field, "", 1), encoding="utf-8")
    result = run(buf, "breaking", str(edited), "--against", str(BASELINE), cache=cache)
    assert result.returncode != 0, "buf breaking accepted a removed field"
    assert "OpenWalletRequest" in result.stdout and "currency_code" in result.stdout, result.stdout + result.stderr


@pytest.mark.node
def test_buf_lint_catches_a_badly_named_message(buf: list[str], cache: Path, tmp_path: Path) -> None:
    edited = copy_of_proto(tmp_path)
    api = edited / API_PROTO
    api.write_text(api.read_text(encoding="utf-8") + "\n// A bad name.\nmessage bad_name {}\n", encoding="utf-8")
    result = run(buf, "lint", str(edited), cache=cache)
    assert result.returncode != 0 and "bad_name" in result.stdout, result.stdout + result.stderr


def test_the_baseline_is_the_published_api_and_still_served() -> None:
    """No buf needed: the image is a FileDescriptorSet; what it publishes still exists, by the same numbers."""
    baseline = descriptor_pb2.FileDescriptorSet.FromString(BASELINE.read_bytes())
    files = {f.name: f for f in baseline.file}
    assert {API_PROTO, WALLET_PROTO} <= set(files), sorted(files)
    published = files[API_PROTO]
    assert published.package == "pokdeng.v1"
    assert {s.name for s in published.service} >= {
        "WalletService",
        "TableService",
        "RoundService",
        "AuditService",
        "EventService",
    }
    current = pb.DESCRIPTOR
    for service in published.service:
        methods = {m.name: m for m in current.services_by_name[service.name].methods}
        for method in service.method:
            assert method.name in methods, f"{service.name}.{method.name} is gone"
            now = methods[method.name]
            assert now.input_type.full_name == method.input_type.lstrip("."), method.name
            assert now.output_type.full_name == method.output_type.lstrip("."), method.name
    for message in published.message_type:
        fields = {f.number: f.name for f in current.message_types_by_name[message.name].fields}
        for field in message.field:
            assert fields.get(field.number) == field.name, f"{message.name}.{field.name} = {field.number} changed"
