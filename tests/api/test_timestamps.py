"""One conversion of the record's times, both ways (``pokdeng_client.chain``): the server's ``record_time``
and the text a client digests are inverses of each other, to the microsecond."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from pokdeng_client.chain import timestamp_of, timestamp_text
from pokdeng_service.api import convert

MOMENTS = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30)).map(
    lambda d: d.replace(tzinfo=UTC)
)


@given(MOMENTS)
def test_a_stored_time_goes_to_a_timestamp_and_back_unchanged(moment: datetime) -> None:
    text = moment.isoformat()  # as the record stores it
    stamp = timestamp_of(text)
    expected = Timestamp()
    expected.FromDatetime(moment)
    assert (stamp.seconds, stamp.nanos) == (expected.seconds, expected.nanos)
    assert timestamp_text(stamp) == text


def test_the_worked_forms() -> None:
    assert timestamp_text(timestamp_of("2026-03-14T15:09:26.587725+00:00")) == "2026-03-14T15:09:26.587725+00:00"
    assert timestamp_text(timestamp_of("2026-03-14T15:09:26+00:00")) == "2026-03-14T15:09:26+00:00"  # a whole second
    assert timestamp_of("") == Timestamp()
    assert vars(convert)["timestamp"] is timestamp_of  # the server sends what the client reads back: one conversion
    before = timestamp_of((datetime(2026, 3, 14, tzinfo=UTC) - timedelta(microseconds=1)).isoformat())
    assert (before.seconds, before.nanos) == (1773446399, 999_999_000)
