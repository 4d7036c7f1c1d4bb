"""A forget request reaches what was said together, and nothing said beside it (issue 22).

A user says one thing in several clauses ("Since my knee operation, I use a cane on the
stairs"); the gate keeps each clause as its own statement, and a request in other words
("my knee trouble") is near one of them. What was said together goes together
(`memory.understanding.topics.by_meaning`), raw statements included; a clause about
something else said in the same message stays. "That" / "刚才那句" is the whole last
message the user stated something in, each of its statements, and nothing said before it.
"""

from __future__ import annotations

from memory.extraction import ForgetRequest
from memory.lifecycle import forget_targets
from memory.store.records import MemoryRecord, Source, stable_id
from memory.understanding.topics import by_meaning

USER = "u"
THREAD = "t"


def said(message: str, clauses: list[tuple[str, list[tuple[str, str]]]]) -> list[MemoryRecord]:
    """Return the raw statements of one message and the records extracted from each.

    Args:
        message: The message id.
        clauses: Each clause's text and its records' `(subject, content)`.
    """
    out = []
    for i, (text, typed) in enumerate(clauses):
        parts = (THREAD, message) if i == 0 else (THREAD, message, str(i))
        sid = stable_id(USER, "turn", *parts)
        src = Source(thread_id=THREAD, message_ids=[message])
        out.append(
            MemoryRecord(id=sid, user_id=USER, kind="episode", subject=f"episode.turn.{THREAD}",
                         content=text, source=src)
        )  # fmt: skip
        for n, (subject, content) in enumerate(typed):
            out.append(
                MemoryRecord(id=f"{sid}-{n}", user_id=USER, kind="fact", subject=subject,
                             content=content,
                             source=src.model_copy(update={"statement_ids": [sid]}))
            )  # fmt: skip
    return out


def contents(records: list[MemoryRecord]) -> set[str]:
    return {r.content for r in records}


def test_a_topic_in_other_words_takes_every_clause_said_about_it() -> None:
    asthma = said(
        "m1",
        [
            ("Because of my asthma", [("health.asthma", "User said: Because of my asthma.")]),
            (
                "I always carry an inhaler.",
                [("habit.inhaler", "User said: I always carry an inhaler.")],
            ),
        ],
    )
    trumpet = said(
        "m2",
        [
            (
                "I play the trumpet in a brass band.",
                [("likes.trumpet", "User said: I play the trumpet.")],
            )
        ],
    )
    assert contents(by_meaning("my breathing problems", asthma + trumpet)) == contents(asthma)


def test_a_clause_of_another_family_goes_when_the_words_mean_it() -> None:
    # The medicine is filed as a routine, and "我吃素" shares 吃 with nothing the words mean.
    stomach = said(
        "m1",
        [
            ("我有胃溃疡", [("health.胃溃疡", "用户说：我有胃溃疡。")]),
            (
                "每天饭后要吃一粒奥美拉唑",
                [("habit.奥美拉唑", "用户说：每天饭后要吃一粒奥美拉唑。")],
            ),
            ("最近好多了", []),
        ],
    )
    diet = said("m2", [("我吃素", [("diet.吃素", "用户说：我吃素。")])])
    assert contents(by_meaning("我胃不舒服的那些事", stomach + diet)) == contents(stomach)


def test_a_neighbour_about_something_else_stays() -> None:
    records = said(
        "m1",
        [
            ("我腰一直疼", [("health.腰疼", "用户说：我腰一直疼。")]),
            ("我在一家银行上班", [("work.银行", "用户说：我在一家银行上班。")]),
        ],
    )
    got = contents(by_meaning("我腰疼的事", records))
    # Its raw statement goes with the record: deleted means gone.
    assert got == {"我腰一直疼", "用户说：我腰一直疼。"}


def test_that_is_the_whole_last_sentence_its_clauses_go_on_with() -> None:
    plants = said(
        "m1",
        [
            ("阳台上种了几盆多肉", [("possessions.多肉", "用户说：阳台上种了几盆多肉。")]),
            ("长得特别慢", []),
            ("每周浇一次水", [("habit.浇水", "用户说：每周浇一次水。")]),
        ],
    )
    last = plants[-2].id  # the raw copy of the last clause
    got = forget_targets(ForgetRequest(query="这个"), plants, [last])
    assert contents(got) == contents(plants)


def test_that_is_the_whole_last_message_and_nothing_said_before_it() -> None:
    # "Scratch that last thing I said" takes back the message, each statement of it (four
    # blind authors meant so), and leaves what an earlier message said.
    before = said("m0", [("我是小学老师", [("work.role", "用户是小学老师。")])])
    both = said(
        "m1",
        [
            ("我喜欢下围棋", [("likes.围棋", "用户说：我喜欢下围棋。")]),
            ("我住在苏州", [("home.苏州", "用户说：我住在苏州。")]),
        ],
    )
    got = forget_targets(ForgetRequest(query="这个"), before + both, [both[-2].id])
    assert contents(got) == contents(both)


def test_that_can_point_at_a_plan() -> None:
    from memory.store.records import check_user_id
    from memory.turn import Said, latest_statements, statements_of

    said_ = [Said("m1", "我养了一只仓鼠。"), Said("m2", "这周末打算把厨房刷一遍。")]
    user = check_user_id(USER)
    hamster, plan = (st.id for st in statements_of(user, THREAD, said_))
    assert latest_statements(user, THREAD, said_)[0] == plan


def test_a_polite_tag_does_not_make_a_forget_request_a_question() -> None:
    from memory.requests import forget_requests

    for asked in (
        "Let's keep my salary off the record, ok?",
        "I'd rather you didn't hang onto my address, ok?",
        "No more holding on to my phone number, alright?",
    ):
        assert forget_requests(asked), asked
    # A question whether it was done still asks.
    assert not forget_requests("Have you deleted my address?")


def test_a_family_the_user_has_one_of_goes_whole_only_when_the_words_mean_it() -> None:
    home = said("m1", [("我住在杭州西湖区", [("profile.city", "用户住在杭州西湖区。")])])
    office = said(
        "m2",
        [
            (
                "我们公司在滨江的一栋写字楼里",
                [("work.写字楼", "用户说：我们公司在滨江的一栋写字楼里。")],
            )
        ],
    )
    typed_home, typed_office = home[1].content, office[1].content
    # The model reads "我们公司的地址" as the home (地址, "address"); the user's records say
    # the words mean the office. Words it reads as of work never take the home whole.
    for words in ("我们公司的地址", "my office address", "where my office is"):
        asked = ForgetRequest(query=words, subject="profile.city")
        assert typed_home not in contents(forget_targets(asked, home + office)), words
    asked = ForgetRequest(query="我们公司的地址", subject="profile.city")
    assert typed_office in contents(forget_targets(asked, home + office))
    # Words that mean the home still take it whole.
    got = contents(
        forget_targets(ForgetRequest(query="我住哪儿", subject="profile.city"), home + office)
    )
    assert typed_home in got and typed_office not in got


def test_that_takes_the_remark_that_goes_on_with_the_statement() -> None:
    # "长得特别慢" states nothing the model keeps, so "that" names the clause before it.
    plants = said(
        "m1",
        [
            ("阳台上种了几盆多肉", [("possessions.多肉", "用户说：阳台上种了几盆多肉。")]),
            ("长得特别慢", []),
        ],
    )
    got = forget_targets(ForgetRequest(query="这个"), plants, [plants[0].id])
    assert contents(got) == contents(plants)
