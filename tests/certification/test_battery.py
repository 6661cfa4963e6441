"""The battery: dieharder's output read, the stream written, and one dieharder test run on the stream
(dieharder is Debian's package: a skip here without it, a failure under CI=true, tests/needs.py)."""

from __future__ import annotations

import io

import pytest

from pokdeng_service.certification.battery import (
    FULL,
    QUICK,
    BatteryTest,
    dieharder_path,
    parse_dieharder,
    run_battery,
    stream_bytes,
    write_stream,
)
from tests.needs import unavailable

OUTPUT = """#=============================================================================#
#            dieharder version 3.31.1 Copyright 2003 Robert G. Brown          #
#=============================================================================#
   rng_name    |rands/second|   Seed   |
stdin_input_raw|  2.62e+07  |         1|
#=============================================================================#
        test_name   |ntup| tsamples |psamples|  p-value |Assessment
#=============================================================================#
   diehard_birthdays|   0|       100|     100|0.73304544|  PASSED
         rgb_bitdist|   2|    100000|     100|0.00021000|   WEAK
"""


def test_the_output_is_read() -> None:
    results = parse_dieharder(OUTPUT, "dieharder -g 200 -S 1 -a", 123)
    assert [(r.test, r.ntup, r.tsamples, r.psamples, r.pvalue, r.assessment) for r in results] == [
        ("diehard_birthdays", 0, 100, 100, 0.73304544, "PASSED"),
        ("rgb_bitdist", 2, 100000, 100, 0.00021, "WEAK"),
    ]
    assert all(r.command == "dieharder -g 200 -S 1 -a" and r.stream_bytes == 123 for r in results)


def test_the_commands() -> None:
    assert BatteryTest(200, "rgb_bitdist", 3, 20).argv("dh") == [
        "dh",
        "-g",
        "200",
        "-S",
        "1",
        "-d",
        "200",
        "-n",
        "3",
        "-p",
        "20",
    ]
    assert FULL[0].command == "dieharder -g 200 -S 1 -a"
    assert all(t.number != 14 for t in QUICK)  # (diehard_sums: "Do Not Use")


def test_the_stream_written_is_the_schedule_s() -> None:
    out = io.BytesIO()
    assert write_stream("s", out, limit=1664 * 300 + 5) == 1664 * 300 + 5
    assert out.getvalue() == stream_bytes("s", 0, 301)[: 1664 * 300 + 5]


@pytest.mark.slow
def test_dieharder_on_the_stream() -> None:
    program = dieharder_path()
    if program is None:
        unavailable("dieharder is not installed (Debian: apt-get install dieharder)")
    (result,) = run_battery("pokdeng-certification", (BatteryTest(0, "diehard_birthdays", psamples=20),), workers=2)
    assert result.test == "diehard_birthdays" and result.psamples == 20
    assert 0.0 <= result.pvalue <= 1.0 and result.assessment in ("PASSED", "WEAK", "FAILED")
    assert result.stream_bytes > 0


def test_every_line_is_its_own_test_in_the_report() -> None:
    from pokdeng_service.certification.rng import battery_tests

    text = OUTPUT + "          sts_serial|   3|    100000|     100|0.54745000|  PASSED\n" * 2
    tests = battery_tests(parse_dieharder(text, "dieharder -g 200 -S 1 -d 102", 1))
    assert [t["id"] for t in tests] == [
        "dieharder/diehard_birthdays/0",
        "dieharder/rgb_bitdist/2",
        "dieharder/sts_serial/3/1",
        "dieharder/sts_serial/3/2",
    ]
    assert tests[1]["dieharder_assessment"] == "WEAK" and tests[1]["pvalue"] == 0.00021
