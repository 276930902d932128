"""Power Fx dates and times in workflow expressions, checked against the values the
Power Fx function reference gives, with "now" frozen through an injected clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from raf.decl.powerfx import FUNCTIONS, Expression, ExpressionError, Variables
from raf.decl.powerfx.dates import use_clock

# the reference's examples are written for 7/15/2013 1:02 PM, local time
NOW = datetime(2013, 7, 15, 13, 2, 0).astimezone()
VARS = Variables({"Local": {"stamp": "2015-11-23T13:37:47", "when": None}})


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with use_clock(lambda: NOW):
        yield


def ev(source: str) -> Any:
    return Expression.compile(source).evaluate(VARS.get, FUNCTIONS)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        # DateAdd reference (Now is 7/15/2013 1:02 PM)
        ('Text(DateAdd(Now(), 3), "dd-mm-yyyy hh:mm")', "18-07-2013 13:02"),
        ('Text(DateAdd(Now(), 4, TimeUnit.Months), "dd-mm-yyyy hh:mm")', "15-11-2013 13:02"),
        ('Text(DateAdd(Now(), -30, TimeUnit.Minutes), "dd-mm-yyyy hh:mm")', "15-07-2013 12:32"),
        ('Text(DateAdd(Date(2024, 1, 31), 1, "Months"), "yyyy-mm-dd")', "2024-02-29"),
        ('Text(DateAdd(Date(2024, 2, 29), 1, TimeUnit.Years), "yyyy-mm-dd")', "2025-02-28"),
        # DateDiff reference
        ('DateDiff(Now(), DateValue("1/1/2014"))', 170),
        ('DateDiff(Now(), DateValue("1/1/2014"), TimeUnit.Months)', 6),
        ('DateDiff(Now(), DateValue("1/1/2014"), TimeUnit.Quarters)', 2),
        ("DateDiff(Date(2020, 12, 31), Date(2021, 1, 1), TimeUnit.Years)", 1),
        (
            'DateDiff(DateTimeValue("1/1/2021 12:00:00 AM"), '
            'DateTimeValue("12/31/2020 11:00:00 PM"), TimeUnit.Hours)',
            -1,
        ),
        # Year, Month, Day, Hour, Minute, Second
        ("Year(Now())", 2013),
        ("Month(Now())", 7),
        ("Day(Now())", 15),
        ("Hour(Now())", 13),
        ("Minute(Now())", 2),
        ("Second(Time(14, 30, 17))", 17),
        ("Year(Local.stamp)", 2015),
        ('Hour(TimeValue("6:15 PM"))', 18),
        # Weekday reference: April 2, 2016 was a Saturday
        ("Weekday(Date(2016, 4, 2))", 7),
        ("Weekday(Date(2016, 4, 2), StartOfWeek.Monday)", 6),
        ("Weekday(Date(2016, 4, 2), StartOfWeek.MondayZero)", 5),
        # Date rolls months and days over; years below 1900 add 1900
        ('Text(Date(2024, 13, 1), "yyyy-mm-dd")', "2025-01-01"),
        ('Text(Date(2024, 3, 0), "yyyy-mm-dd")', "2024-02-29"),
        ('Text(Date(99, 1, 1), "yyyy")', "1999"),
        # Text reference, 11/23/2015 1:37:47 PM
        ("Text(DateTimeValue(Local.stamp), DateTimeFormat.LongDate)", "Monday, November 23, 2015"),
        (
            "Text(DateTimeValue(Local.stamp), DateTimeFormat.LongDateTime)",
            "Monday, November 23, 2015 1:37:47 PM",
        ),
        ("Text(DateTimeValue(Local.stamp), DateTimeFormat.LongTime24)", "13:37:47"),
        ("Text(DateTimeValue(Local.stamp), DateTimeFormat.ShortDate)", "11/23/2015"),
        ('Text(DateTimeValue(Local.stamp), "d-mmm-yy")', "23-Nov-15"),
        ('Text(DateTimeValue(Local.stamp), "dddd mmmm d")', "Monday November 23"),
        ('Text(DateTimeValue(Local.stamp), "h:mm:ss a/p")', "1:37:47 p"),
        ('Text(DateTimeValue(Local.stamp), "yyyy\\"-\\"mm")', "2015-11"),
        # dates print, compare and leave the formula as Power Fx does
        ('"On " & Date(2015, 3, 18)', "On 3/18/2015"),
        ('"At " & Time(14, 30, 0)', "At 2:30 PM"),
        ('"" & DateTime(2015, 3, 18, 9, 5, 0)', "3/18/2015 9:05 AM"),
        ("Date(2024, 1, 2) > Date(2024, 1, 1)", True),
        ('DateValue("2024-01-01") = Date(2024, 1, 1)', True),
        ("Time(9, 0, 0) < Time(17, 0, 0)", True),
        ("Date(2015, 3, 18)", "2015-03-18"),
        ("Today()", "2013-07-15"),
        ("Now()", "2013-07-15T13:02:00"),
        ("DateTime(2015, 3, 18, 9, 5, 0)", "2015-03-18T09:05:00"),
        ("Time(25, 0, 0)", "01:00:00"),
        ("IsToday(Now())", True),
        ("Max(Date(2024, 1, 2), Date(2023, 5, 1))", "2024-01-02"),
        ("Min(ForAll(Sequence(3), {d: Date(2020, Value, 1)}), d)", "2020-01-01"),
        ("DateValue(Date(2015, 3, 18)) = Date(2015, 3, 18)", True),
    ],
)
def test_date_functions_give_the_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_utc_now_reads_the_same_clock() -> None:
    utc = NOW.astimezone(UTC).replace(tzinfo=None)
    assert ev("UTCNow()") == utc.isoformat()
    assert ev("UTCToday()") == utc.date().isoformat()
    assert ev("DateDiff(UTCNow(), Now(), TimeUnit.Minutes)") == round(
        (NOW.replace(tzinfo=None) - utc).total_seconds() / 60
    )


def test_a_date_in_a_table_leaves_the_formula_as_iso_text() -> None:
    assert ev("[Date(2020, 1, 2)]") == ["2020-01-02"]
    assert ev("JSON({d: Date(2020, 1, 2)})") == '{"d": "2020-01-02"}'


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ('Year("yesterday-ish")', "is not a date"),
        ('DateAdd(Now(), 1, "Fortnights")', "is not a time unit"),
        ("Date(20000000, 1, 1)", "out of range"),
        ("DateAdd(Date(9999, 12, 31), 1, TimeUnit.Years)", "out of range"),
        ("Now() + 1", "expected a number, got a date and time"),
        ("Weekday(Now(), 9)", "not a start of week"),
    ],
)
def test_bad_date_arguments_are_located_errors(source: str, says: str) -> None:
    with pytest.raises(ExpressionError, match=says) as info:
        ev(source)
    assert info.value.offset is not None


def test_a_misspelt_enumeration_member_is_found_when_the_formula_is_read() -> None:
    with pytest.raises(ExpressionError, match="TimeUnit.Fortnights is not a member") as info:
        Expression.compile("DateAdd(Now(), 1, TimeUnit.Fortnights)")
    assert info.value.offset == 18


def test_sort_orders_dates_by_time_not_by_their_text() -> None:
    got = ev("Sort([Date(2024, 10, 1), Date(2024, 9, 1), Date(2023, 12, 31)], Value)")
    assert got == ["2023-12-31", "2024-09-01", "2024-10-01"]
    assert ev('First(Sort([Date(2024, 10, 1), Date(2024, 9, 1)], Value, "Descending"))') == (
        "2024-10-01"
    )
