"""The HMAC byte stream of the seed schedule through dieharder (docs/certification.md, "The battery").

The stream (``schedule``: blocks 0 .. 51 of eight-deck shoe 0, then of shoe 1, ...) is made by worker
processes, in order, and written to ``dieharder -g 200`` (raw binary on standard input). Each test is its
own dieharder process that reads the stream from its first byte, so every p-value is reproduced by
``pokdeng rng-report --battery-stream SEED | dieharder -g 200 -d TEST -S 1 [-p PSAMPLES]`` or by the
lab's own generator of the same bytes (docs/shuffle.md sections 4 and 12).

Dieharder (Debian's package ``dieharder``, 3.31) was chosen over NIST SP 800-22: it is one C program that
reads raw bytes on standard input (nothing to convert), holds the Diehard tests, the NIST STS tests it
implements and Brown's RGB tests, and is packaged by Debian; the Python ports of SP 800-22 on PyPI are
pure Python (slow at the sizes a lab asks for) and their maintenance is thin.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import shutil
import subprocess
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import IO

from pokdeng_service.certification import schedule
from pokdeng_service.certification.fastshuffle import shoe_stream, stream_prefix

__all__ = (
    "FULL",
    "QUICK",
    "BatteryResult",
    "BatteryTest",
    "dieharder_path",
    "parse_dieharder",
    "run_battery",
    "stream_bytes",
    "write_stream",
)

SHOES_PER_CHUNK = 256  # 256 x 1,664 bytes = 416 KiB per piece of the stream


@dataclass(frozen=True, slots=True)
class BatteryTest:
    """One dieharder run on the stream: ``-d number`` (``None``: ``-a``, every test in turn, each reading on
    where the last stopped), with ``-n ntuple`` and ``-p psamples`` when set (else dieharder's defaults)."""

    number: int | None
    name: str
    ntuple: int | None = None
    psamples: int | None = None

    def argv(self, dieharder: str) -> list[str]:
        out = [dieharder, "-g", "200", "-S", "1"]
        out += ["-a"] if self.number is None else ["-d", str(self.number)]
        if self.ntuple is not None:
            out += ["-n", str(self.ntuple)]
        if self.psamples is not None:
            out += ["-p", str(self.psamples)]
        return out

    @property
    def command(self) -> str:
        return " ".join(self.argv("dieharder"))


# Tests dieharder rates "Good" (dieharder -l) that read at most about 450 MB of the stream at their default
# sizes (together about 2 GB: a few minutes here); rgb_bitdist at the tuple sizes dieharder -a uses.
QUICK: tuple[BatteryTest, ...] = (
    BatteryTest(0, "diehard_birthdays"),
    BatteryTest(1, "diehard_operm5"),
    BatteryTest(3, "diehard_rank_6x8"),
    BatteryTest(4, "diehard_bitstream"),
    BatteryTest(8, "diehard_count_1s_str"),
    BatteryTest(10, "diehard_parking_lot"),
    BatteryTest(11, "diehard_2dsphere"),
    BatteryTest(12, "diehard_3dsphere"),
    BatteryTest(15, "diehard_runs"),
    BatteryTest(100, "sts_monobit"),
    BatteryTest(101, "sts_runs"),
    BatteryTest(102, "sts_serial"),
    *(BatteryTest(200, "rgb_bitdist", n) for n in range(1, 13)),
    BatteryTest(204, "rgb_kstest_test"),
    BatteryTest(206, "dab_dct"),
    BatteryTest(208, "dab_filltree2"),
    BatteryTest(209, "dab_monobit2"),
)
FULL: tuple[BatteryTest, ...] = (BatteryTest(None, "dieharder -a"),)
"""``dieharder -a``: every test at dieharder's defaults, one after another on one reading of the stream
(tens of GB: hours with this generator on two cores)."""


@dataclass(frozen=True, slots=True)
class BatteryResult:
    """One p-value line of dieharder's output."""

    test: str
    command: str  # the dieharder command line that gave it (reading the stream on standard input)
    ntup: int
    tsamples: int
    psamples: int
    pvalue: float
    assessment: str
    stream_bytes: int  # bytes written to dieharder before it finished (an upper bound of what it read)


def dieharder_path() -> str | None:
    return shutil.which("dieharder")


def stream_bytes(report_seed: str, first_shoe: int, shoes: int) -> bytes:
    """The battery's stream for shoes ``first_shoe .. first_shoe + shoes - 1`` (``schedule``)."""
    seeds = schedule.server_seeds(report_seed, first_shoe, shoes)
    seed_text = schedule.client_seed(schedule.BATTERY_DECKS)
    return b"".join(
        shoe_stream(seed, stream_prefix(seed_text, first_shoe + k), schedule.BATTERY_BLOCKS)
        for k, seed in enumerate(seeds)
    )


def _pieces(report_seed: str, pool: ProcessPoolExecutor | None, ahead: int) -> Generator[bytes, None, None]:
    """The stream, piece after piece, forever (made by ``pool``, ``ahead`` pieces ahead; else here)."""
    first = 0
    if pool is None:
        while True:
            yield stream_bytes(report_seed, first, SHOES_PER_CHUNK)
            first += SHOES_PER_CHUNK
    pending: deque[Future[bytes]] = deque()
    try:
        while True:
            while len(pending) < ahead:
                pending.append(pool.submit(stream_bytes, report_seed, first, SHOES_PER_CHUNK))
                first += SHOES_PER_CHUNK
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def _pool(workers: int) -> ProcessPoolExecutor | None:
    if workers <= 1:
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def write_stream(
    report_seed: str,
    out: IO[bytes],
    *,
    workers: int = 1,
    limit: int | None = None,
    pool: ProcessPoolExecutor | None = None,
) -> int:
    """Write the stream to ``out`` until the reader goes away (or ``limit`` bytes); the bytes written.

    Made by ``pool`` if given, else by ``workers`` processes of its own (1: in this one)."""
    own = _pool(workers) if pool is None else None
    written = 0
    pieces = _pieces(report_seed, pool or own, 2 * max(1, workers))
    try:
        for piece in pieces:
            if limit is not None and written + len(piece) >= limit:
                out.write(piece[: limit - written])
                out.flush()
                return limit
            out.write(piece)
            written += len(piece)
    except (BrokenPipeError, OSError):
        pass
    finally:
        pieces.close()
        if own is not None:
            own.shutdown(cancel_futures=True)
    return written


def parse_dieharder(text: str, command: str, written: int) -> list[BatteryResult]:
    """The p-value lines of dieharder's table output (``name| ntup| tsamples| psamples| p-value| verdict``)."""
    out = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) != 6 or line.lstrip().startswith("#") or cells[0] in ("test_name", "rng_name"):
            continue
        try:
            out.append(
                BatteryResult(
                    cells[0], command, int(cells[1]), int(cells[2]), int(cells[3]), float(cells[4]), cells[5], written
                )
            )
        except ValueError:
            continue
    return out


def run_test(
    report_seed: str, test: BatteryTest, dieharder: str, workers: int, pool: ProcessPoolExecutor | None = None
) -> list[BatteryResult]:
    """One dieharder run on the stream from its first byte."""
    process = subprocess.Popen(
        test.argv(dieharder), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    written = write_stream(report_seed, process.stdin, workers=workers, pool=pool)
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        process.stdin.close()
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()  # (dieharder writes a few lines: no deadlock)
    process.wait()
    results = parse_dieharder(out.decode("utf-8", "replace"), test.command, written)
    if not results:
        raise RuntimeError(f"{test.command} gave no p-value: {err.decode('utf-8', 'replace')[-500:]}")
    return results


def run_battery(
    report_seed: str,
    tests: tuple[BatteryTest, ...],
    *,
    workers: int = 1,
    dieharder: str | None = None,
    progress: Callable[[int, str], None] | None = None,
) -> list[BatteryResult]:
    """Every test of ``tests``, in turn; ``progress(done, name)`` after each."""
    program = dieharder or dieharder_path()
    if program is None:
        raise FileNotFoundError("dieharder is not installed (Debian: apt-get install dieharder)")
    results: list[BatteryResult] = []
    pool = _pool(workers)
    try:
        for done, test in enumerate(tests, 1):
            results += run_test(report_seed, test, program, workers, pool)
            if progress is not None:
                progress(done, test.name)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return results
