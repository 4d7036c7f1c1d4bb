"""Dates: the one date grammar, English and Chinese time words to calendar days.

`find_date` dates what a statement names, `find_window` the span a query asks about,
`find_yearly` a day that comes back every year. The rules live in `memory.dates.rules`,
calendar arithmetic in `memory.dates.spans`.
"""

from memory.dates.grammar import (
    DateMention,
    Lean,
    TimeWindow,
    YearlyDate,
    find_date,
    find_window,
    find_yearly,
    is_date_phrase,
    statement_lean,
    without_date,
)

__all__ = [
    "DateMention",
    "Lean",
    "TimeWindow",
    "YearlyDate",
    "find_date",
    "find_window",
    "find_yearly",
    "is_date_phrase",
    "statement_lean",
    "without_date",
]
