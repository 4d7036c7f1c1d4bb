"""A move of the user's employer or home that begins on a day lasts past it.

"I'm starting at the council planning office next Monday" is a day and a new employer from
then on. Kept only as the day's event, which expires after it, the new job was gone a day
after it began, and the old one answered "where do I work?" again. The `moves` head
(`memory/understanding/corpus/moves.*.txt`) reads such a clause, without its day, apart from
a one-off at work or at home on a day, a change at the same job, a trip, and someone else's
news; the offline path keeps what it reads as the family's new value, beside the day
(`graphs.offline_rules._lasting`).
"""

from __future__ import annotations

import pytest

from agent.runner import Session
from memory.dates import without_date


async def _live(s: Session, user: str) -> list[tuple[str, str, bool]]:
    """Return `(subject, content, expires)` of the user's live typed memories."""
    return [(r.subject, r.content, r.expires_at is not None) for r in await s.service.alist(user)]


@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        (
            "I work at a garden centre in Leeds",
            "I'm starting at the council planning office next Monday",
            "garden centre",
            "planning office",
        ),
        ("我在一家书店上班", "下周一开始去市图书馆上班了", "书店", "图书馆"),
        ("I live in Leeds", "we get the keys to the new place in York on the 3rd", "Leeds", "York"),
    ],
)
async def test_a_move_from_a_day_is_kept_past_it_and_ends_the_old_value(
    offline_session: Session, before: str, after: str, old: str, new: str
) -> None:
    s = offline_session
    await s.turn("lena", "lena-1", before)
    res = await s.turn("lena", "lena-2", after)
    live = await _live(s, "lena")
    # The new value is kept for good, with its day (the day itself may be an event too).
    kept = [(subject, c) for subject, c, expires in live if new in c and not expires]
    assert kept and all(any(ch.isdigit() for ch in c) for _, c in kept), (kept, res.saved)
    assert not any(old in c for _, c, _ in live), live


@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        (
            "I work at a hardware store in Penrith",
            "new job as of this week! I'm at a timber yard out in Parramatta now",
            "hardware store",
            "timber yard",
        ),
        ("我家在西湖区那边", "终于搬完了！现在住滨江，离公司近多了", "西湖区", "滨江"),
        (
            "I'm a receptionist at the dental practice on Elm Road",
            "Huge news, I took an offer as a paralegal at a firm in town, first day Monday",
            "dental practice",
            "paralegal",
        ),
    ],
)
async def test_a_move_said_in_several_parts_is_one_piece_of_news(
    offline_session: Session, before: str, after: str, old: str, new: str
) -> None:
    # No part says both that it changed and what to: the message is read as one.
    s = offline_session
    await s.turn("noor", "noor-1", before)
    res = await s.turn("noor", "noor-2", after)
    live = await _live(s, "noor")
    assert any(new in c and not expires for _, c, expires in live), (live, res.saved)
    assert not any(old in c for _, c, _ in live), live


@pytest.mark.parametrize(
    ("mine", "theirs", "kept"),
    [
        ("I work at a garden centre in Leeds", "my husband got a new job at Tesco!", "garden"),
        ("I live in Leeds", "my daughter finally moved out, she's in Bristol now", "Leeds"),
        ("我在一家书店上班", "我老公换工作了，现在在银行上班", "书店"),
    ],
)
async def test_news_of_a_relative_ends_nothing_of_the_users_own(
    offline_session: Session, mine: str, theirs: str, kept: str
) -> None:
    s = offline_session
    await s.turn("ravi", "ravi-1", mine)
    res = await s.turn("ravi", "ravi-2", theirs)
    live = await _live(s, "ravi")
    assert any(kept in c for _, c, _ in live), (live, res.saved)


@pytest.mark.parametrize(
    ("first", "one_off", "kept"),
    [
        ("I work at a garden centre in Leeds", "got a job interview on Friday", "garden centre"),
        ("I work at a garden centre in Leeds", "my new boss starts on Monday", "garden centre"),
        ("I work at a garden centre in Leeds", "my sister starts at the bank on Monday", "garden"),
        ("我在一家书店上班", "我们部门团建定在下周六，去爬山", "书店"),
        ("我在一家书店上班", "我下周一去北京出差", "书店"),
        ("I live in Leeds", "we're off to Cornwall for a week on Saturday", "Leeds"),
        ("I live in Leeds", "the hip op's been pushed back to the 21st of November", "Leeds"),
        ("我住在无锡", "下周三去看房", "无锡"),
    ],
)
async def test_a_one_off_on_a_day_ends_no_job_or_home(
    offline_session: Session, first: str, one_off: str, kept: str
) -> None:
    s = offline_session
    await s.turn("omar", "omar-1", first)
    await s.turn("omar", "omar-2", one_off)
    live = await _live(s, "omar")
    assert any(kept in c and not expires for _, c, expires in live), live


async def test_a_move_said_beside_a_forget_request_is_why_not_news(
    offline_session: Session,
) -> None:
    s = offline_session
    await s.turn("ida", "ida-1", "I work at a garden centre in Leeds")
    why = "I am starting at the council planning office next Monday anyway"
    await s.turn("ida", "ida-1", f"forget my job stuff. {why}")
    assert not any(
        subject.startswith("work") or "planning" in c for subject, c, _ in await _live(s, "ida")
    )


@pytest.mark.parametrize(
    ("said", "without"),
    [
        ("I start at the planning office next Monday", "I start at the planning office"),
        ("下个月起我调到深圳分公司上班", "起我调到深圳分公司上班"),
        ("On the 15th I begin as a nurse", "I begin as a nurse"),
        ("no day in this one", "no day in this one"),
    ],
)
def test_without_date_drops_the_day_and_keeps_what_happens(said: str, without: str) -> None:
    assert without_date(said) == without
