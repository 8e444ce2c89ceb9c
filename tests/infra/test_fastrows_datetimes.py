"""A datetime written on the turn path is adapted as its field adapts it: an aware UTC
datetime goes the field's shortcut (fastrows._utc_adapter), found once per field by trying it
against the field's own adaptation; any other datetime, and a field the shortcut does not fit,
goes the field's way. On SQLite here and on PostgreSQL in CI."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta, timezone

from django.apps import apps
from django.db import connection
from django.db.models import DateField
from hypothesis import given
from hypothesis import strategies as st

from processes.models import ThinkProcess
from vancetope.infra import fastrows

# A date column (none of the Brain's models has one), and every datetime column of its models.
DAY = DateField()
DAY.set_attributes_from_name("day")
DATE_FIELDS = [
    DAY,
    *(
        field
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if isinstance(field, DateField)
    ),
]
ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), zoneinfo.ZoneInfo("America/New_York")]


@given(
    field=st.sampled_from(DATE_FIELDS),
    # (hypothesis takes naive bounds and draws the zone apart)
    moment=st.datetimes(
        min_value=datetime(1900, 1, 1),  # noqa: DTZ001
        max_value=datetime(2200, 1, 1),  # noqa: DTZ001
        timezones=st.sampled_from(ZONES),
    ),
)
def test_an_aware_datetime_is_adapted_as_its_field_adapts_it(field, moment):
    # when: a date or datetime field's value is adapted, twice (the second from what was kept)
    expected = field.get_db_prep_save(moment, connection)
    # then: it is what the field gives, of the same type
    for _ in range(2):
        adapted = fastrows.adapt(field, moment, connection)
        assert adapted == expected
        assert type(adapted) is type(expected)


def test_a_datetime_field_has_a_shortcut_for_utc_and_a_date_field_has_none():
    # given: a datetime column and a date column the shortcut cannot fit (a date is no datetime)
    lease = ThinkProcess._meta.get_field("lease_expires_at")
    now = datetime.now(tz=UTC)
    # when: each adapts a UTC datetime
    fastrows.adapt(lease, now, connection)
    fastrows.adapt(DAY, now, connection)
    # then: the datetime field found its shortcut (a backend whose adapter changed would lose
    # it silently: this says so), the date field none
    shortcut = fastrows._utc_adapters[connection.vendor, id(lease)]
    assert shortcut is not None
    assert fastrows._utc_adapters[connection.vendor, id(DAY)] is None
    # and: the shortcut gives the field's own adaptation
    assert shortcut(now) == lease.get_db_prep_save(now, connection)
