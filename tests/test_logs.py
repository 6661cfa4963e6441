"""The log is bounded and honest (``pokdeng_service/logs.py``): fields cut with a digest of the whole, control
characters escaped in the text format, a queue bounded in lines and bytes whose drops are counted, rate
limits that count what they suppress, and the gRPC core's own lines in the same structured stream."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from pokdeng_service.logs import (
    LOG_DROPPED,
    LOG_SUPPRESSED,
    BatchingHandler,
    JsonFormatter,
    RateLimit,
    TextFormatter,
    cut,
    escape,
)

ROOT = Path(__file__).resolve().parents[1]
LONG = "r" * 31_000  # an id of 31,000 characters (the field's own limit is 128)


def _record(message: str = "%s %s", args: tuple[Any, ...] = ("m", "c"), call: dict[str, Any] | None = None) -> Any:
    record = logging.LogRecord("pokdeng.calls", logging.INFO, "", 0, message, args, None)
    if call:
        record.call = call
    return record


def _counted(metric: Any, **labels: str) -> float:
    return float(metric.labels(**labels)._value.get())


def test_a_long_field_is_cut_and_keeps_its_length_and_digest() -> None:
    digest = hashlib.sha256(LONG.encode()).hexdigest()[:12]
    assert cut(LONG, 128) == f"{'r' * 128}...[31000 chars, sha256 {digest}]"
    assert cut("short", 128) == "short"
    other = LONG[:-1] + "s"  # (the same first 128 characters: told apart by the digest)
    assert cut(other, 128) != cut(LONG, 128)
    line: dict[str, Any] = {"method": "pokdeng.v1.RoundService/PlaceBet", "role": "none", "code": "UNAUTHENTICATED"}
    line |= {"latency_ms": 0.2, "request_id": LONG, "round_id": LONG, "peer": "ipv4:10.0.0.5:53122"}
    json_line = JsonFormatter().format(_record(call=line))
    parsed = json.loads(json_line)
    assert parsed["round_id"] == parsed["request_id"] == cut(LONG, 128) and parsed["latency_ms"] == 0.2
    assert len(json_line.encode()) < 1024  # (it was 62,000 bytes: both ids whole)
    text_line = TextFormatter().format(_record(call=line))
    assert f'round_id="{"r" * 128}...[31000 chars, sha256 {digest}]"' in text_line
    assert len(text_line.encode()) < 1024
    # a message and a traceback are cut too (at 1,024 and 8,192 characters)
    assert len(json.loads(JsonFormatter().format(_record("%s", (LONG,))))["msg"]) < 1100


FORGED = "t#1\n2026-01-01 00:00:00,000 CRITICAL pokdeng.integrity: STREAM FORGED round t#1"


def test_the_text_format_escapes_control_characters_so_no_value_can_forge_a_line() -> None:
    formatter = TextFormatter()
    fields = {"method": "pokdeng.v1.RoundService/GetRound", "code": "UNAUTHENTICATED"}
    line = formatter.format(_record(call={**fields, "round_id": FORGED, "request_id": "a code=OK"}))
    assert "\n" not in line and "\r" not in line
    assert 'round_id="t#1\\n2026-01-01 00:00:00,000 CRITICAL pokdeng.integrity: STREAM FORGED round t#1"' in line
    assert 'request_id="a code=OK"' in line  # (quoted: it cannot pass for a field of its own)
    hostile = "a\rb\x1b[2Jc\x00d\x7fe\x9bf\u2028g\u202eh\\i\tj"
    escaped = escape(hostile)
    assert escaped == "a\\rb\\x1b[2Jc\\x00d\\x7fe\\x9bf\\u2028g\\u202eh\\\\i\\tj"
    assert escaped.isprintable()
    assert escape("ป๊อกเด้ง alice") == "ป๊อกเด้ง alice"  # (printable text of any script stays as it is)
    message = formatter.format(_record("bet on %s", (FORGED,)))
    assert message.count("\n") == 0 and "bet on t#1\\n2026" in message
    try:
        raise ValueError(FORGED)
    except ValueError:
        failed = logging.LogRecord("pokdeng.api", logging.ERROR, "", 0, "failed", (), sys.exc_info())
    lines = formatter.format(failed).split("\n")
    assert lines[0].endswith("ERROR pokdeng.api: failed")
    assert all(line.startswith("  | ") for line in lines[1:]) and len(lines) > 2
    # the JSON format escapes by itself: one line, the value whole
    parsed = json.loads(JsonFormatter().format(_record(call={"round_id": FORGED})))
    assert parsed["round_id"] == FORGED


def test_a_flood_into_a_pipe_nobody_reads_stays_within_the_bound_and_every_drop_is_counted() -> None:
    read, write = os.pipe()
    stream = os.fdopen(write, "w", encoding="utf-8")
    bound = 256 * 1024
    handler = BatchingHandler(stream, JsonFormatter(), interval=0.005, capacity=10_000, max_bytes=bound)
    handler.flush_timeout = 0.2
    before = {reason: _counted(LOG_DROPPED, reason=reason) for reason in ("lines", "bytes")}
    sent = 5_000
    for k in range(sent):  # ~1 KB a line: 5 MB, where the pipe holds 64 KB and the queue 256 KiB
        handler.handle(_record(call={"method": "m", "code": "UNAUTHENTICATED", "round_id": f"{k:06d}" + "x" * 900}))
    assert handler.most_bytes <= bound  # the lines waiting and the batch being written, never more
    assert handler.pending_bytes <= bound and handler.dropped > 0
    dropped = sum(_counted(LOG_DROPPED, reason=reason) - before[reason] for reason in ("lines", "bytes"))
    assert dropped == handler.dropped
    handler.flush()  # (asks the writer, which is stuck in a write: returns after flush_timeout all the same)
    # a reader comes: every line sent is either written or counted as dropped, and a line says how many
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    handler.flush_timeout = 30
    handler.flush()
    handler.close()
    stream.close()
    reader.join(30)
    lines = [json.loads(line) for line in received.decode().splitlines()]
    calls = [line for line in lines if line["logger"] == "pokdeng.calls"]
    reports = [line for line in lines if line["logger"] == "pokdeng.log"]
    assert len(calls) + handler.dropped == sent
    assert reports and sum(report["dropped"] for report in reports) == handler.dropped
    assert handler.pending_bytes == 0


def test_the_queue_is_bounded_in_lines_too() -> None:
    out = io.StringIO()
    handler = BatchingHandler(out, JsonFormatter(), interval=3600, capacity=100, max_bytes=10**9)
    try:
        for k in range(150):
            handler.handle(_record(call={"k": k}))
        assert handler.dropped == 50 and len(handler._lines) == 100
    finally:
        handler.close()
    assert len(out.getvalue().splitlines()) == 101  # the hundred, and the line that says 50 were dropped


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_rate_limit_per_key_counts_what_it_suppresses_and_sums_it_up() -> None:
    clock = Clock()
    limit = RateLimit("unauthenticated", 5, 10, logger="pokdeng.calls", keys=3, every=10, clock=clock)
    counted = _counted(LOG_SUPPRESSED, source="unauthenticated")
    assert [limit.allow("a") for _ in range(12)] == [True] * 10 + [False] * 2  # a burst of 10, then 5 a second
    assert limit.allow("b")  # (another key has its own)
    clock.now += 1.0
    assert [limit.allow("a") for _ in range(6)] == [True] * 5 + [False]
    assert limit.summary() is None  # (not 10 s yet)
    clock.now += 9.0
    summary = limit.summary()
    assert summary is not None and summary.levelno == logging.WARNING and summary.name == "pokdeng.calls"
    assert summary.fields == {"suppressed": 3, "sources": 1, "source": "unauthenticated"}  # type: ignore[attr-defined]
    assert "suppressed 3 unauthenticated line(s) from 1 source(s)" in summary.getMessage()
    assert limit.summary(force=True) is None  # (nothing since)
    assert _counted(LOG_SUPPRESSED, source="unauthenticated") - counted == 3
    # at most ``keys`` keys are tracked: beyond, new keys share one bucket (idle keys are forgotten first)
    for key in ("c", "d", "e", "f"):
        limit.allow(key)
    assert len(limit._buckets) <= 3 + 1  # (and the shared one)
    silent = RateLimit("grpc.core", 0, clock=clock)
    assert not silent.allow("x") and silent.summary(force=True) is not None


CAPTURE_SCRIPT = textwrap.dedent(
    """
    import os, socket, sys, time
    from pokdeng_service.logs import capture_stderr, configure_logging, quiet_grpc_core
    quiet_grpc_core()  # (GRPC_VERBOSITY from the environment wins, as in pokdeng serve)
    import grpc
    from concurrent import futures
    handler = configure_logging(sys.argv[1], "INFO")
    capture_stderr()
    cert, key = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
    server = grpc.server(futures.ThreadPoolExecutor(2))
    port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
    server.start()
    for _ in range(3):  # plaintext to a TLS port: a failed handshake each
        with socket.create_connection(("127.0.0.1", port)) as plain:
            plain.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
            plain.recv(100)
    os.write(2, b"E1207 15:23:56.142943   31439 chttp2_server.cc:12] C core says\\x1b[31m red\\n")
    os.write(2, b"a line of some other library\\n")
    time.sleep(0.5)
    server.stop(0).wait()
    """
)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = tmp_path_factory.mktemp("capture")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pokdeng.test")])
    now = datetime.datetime.now(datetime.UTC)
    builder = x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
    builder = builder.serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
    cert = builder.sign(key, hashes.SHA256())
    (folder / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    (folder / "k.pem").write_bytes(pem)
    return folder / "c.pem", folder / "k.pem"


def _captured(certificate: tuple[Path, Path], log_format: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("GRPC_VERBOSITY", "GRPC_TRACE")}
    environ.update(PYTHONPATH=str(ROOT), **env)
    done = subprocess.run(
        [sys.executable, "-c", CAPTURE_SCRIPT, log_format, str(certificate[0]), str(certificate[1])],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


def test_the_grpc_cores_lines_join_the_structured_log(certificate: tuple[Path, Path]) -> None:
    """With GRPC_VERBOSITY=INFO the core writes a line per failed handshake to descriptor 2: each becomes a
    JSON record of the grpc.core logger, and every line of standard error is one JSON object."""
    err = _captured(certificate, "json", GRPC_VERBOSITY="INFO")
    lines = [json.loads(line) for line in err.splitlines()]  # (every line: a JSON object)
    core = [line for line in lines if line["logger"] == "grpc.core"]
    handshakes = [line for line in core if "Handshake failed" in line["msg"]]
    assert handshakes and all(line["level"] == "INFO" for line in handshakes)
    assert all(line["source"].startswith("ssl_transport_security.cc:") for line in handshakes)
    said = [line for line in core if line["msg"].startswith("C core says")]
    assert said == [said[0]] and said[0]["level"] == "ERROR" and said[0]["source"] == "chttp2_server.cc:12"
    assert said[0]["msg"] == "C core says\x1b[31m red"  # (JSON escapes it: "\u001b")
    other = [line for line in core if line["msg"] == "a line of some other library"]
    assert other and other[0]["level"] == "WARNING"
    text = _captured(certificate, "text", GRPC_VERBOSITY="INFO")
    assert "ERROR grpc.core: C core says\\x1b[31m red source=chttp2_server.cc:12" in text
    assert "\x1b" not in text


def test_without_grpc_verbosity_the_core_says_nothing_of_failed_handshakes(certificate: tuple[Path, Path]) -> None:
    """``quiet_grpc_core``: GRPC_VERBOSITY=ERROR unless the environment says otherwise (pokdeng serve)."""
    err = _captured(certificate, "json")
    lines = [json.loads(line) for line in err.splitlines()]
    assert not [line for line in lines if "Handshake failed" in line.get("msg", "")]
    assert [line["msg"] for line in lines if line["logger"] == "grpc.core"] == [
        "C core says\x1b[31m red",
        "a line of some other library",
    ]


def test_a_capture_gives_descriptor_2_back(tmp_path: Path) -> None:
    """In a child: records of what C code wrote while captured; after ``close`` descriptor 2 is the file again."""
    script = textwrap.dedent(
        """
        import os, sys
        from pokdeng_service.logs import StderrCapture, configure_logging
        handler = configure_logging("json", "INFO")
        capture = StderrCapture()
        os.write(2, b"while captured\\n")
        capture.close()
        os.write(2, b"after\\n")
        handler.close()
        """
    )
    with open(tmp_path / "err", "w") as err:
        subprocess.run(
            [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=err, timeout=60
        )
    lines = (tmp_path / "err").read_text().splitlines()
    assert "after" in lines and len(lines) == 2  # (written at once, where the record waited for the writer)
    assert json.loads(next(line for line in lines if line != "after"))["msg"] == "while captured"
