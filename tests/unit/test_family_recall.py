"""What the understanding model's labels do for recall and the raw archive (issue 22).

A question about a family brings what is filed under it, though no word is shared and the
encoder puts them apart; small talk is not kept raw, so it does not come back for questions
its vector sits near.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes import save_facts
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from scale_checks import leaks

from agent.runner import open_session
from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.extraction import CandidateMemory, Extraction
from memory.service import MemoryService
from memory.store.records import Source

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)
HOME = "User said: We rent a narrow townhouse in Delft."


def test_a_question_about_a_family_brings_what_is_filed_under_it(service: MemoryService) -> None:
    notes = [
        ("home.we_rent_a_narrow_townhouse_in", HOME),
        ("work.role", "User is a radiographer at the county hospital."),
        ("likes.films", "User likes old films."),
    ]
    memories = [CandidateMemory(kind="fact", subject=s, content=c) for s, c in notes]
    service.save("u", Extraction(memories=memories), Source(thread_id="t", said_at=T0))
    got = [h.record.content for h in service.search("u", "Where do I live?", 5)]
    assert HOME in got, got
    # a question about no family brings nothing for its family
    assert HOME not in [h.record.content for h in service.search("u", "Any good films?", 5)]


async def _kept_after(index: object, texts: tuple[str, ...]) -> list[str]:
    """Say `texts` in one thread through the compiled graph; return all kept for the user."""
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)  # type: ignore[arg-type]
    for text in texts:
        await graph.ainvoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": "t1"}},
            context=Context(user_id="u"),
        )
    return [r.content for r in MemoryService(store, index).list("u", include_turns=True)]  # type: ignore[arg-type]


async def test_a_part_of_a_statement_read_as_asking_with_no_form_of_a_question_is_kept(
    index: object,
) -> None:
    # The asking heads read sentences; of a statement's parts, "叫豆豆 会作揖" (the dog's
    # name) read as asking and was kept nowhere. A part that asks by its form is still no
    # statement, and a message that states nothing keeps none of it.
    kept = await _kept_after(index, ("我养了条柯基 叫豆豆 会作揖 还会装死",))
    assert any("豆豆" in k for k in kept), kept
    kept = await _kept_after(index, ("我膝盖最近老疼，有什么拉伸动作推荐吗",))
    assert not any("拉伸" in k for k in kept), kept


async def test_a_part_kept_raw_for_a_misread_question_is_gone_from_disk_when_forgotten(
    tmp_path: Path,
) -> None:
    # The part now kept raw is one more copy of what the user said: it is on disk (the store,
    # the thread's checkpoint) and a hard forget of it leaves nothing there.
    home = tmp_path / "home"
    settings = Settings(backend=BackendConfig(home=str(home)), model="offline")
    async with open_session(settings) as session:
        await session.turn("u", "t1", "我养了条柯基 叫豆豆 会作揖 还会装死")
        assert leaks(home, ["豆豆"], [])
        while named := [
            r for r in await session.service.alist("u", include_turns=True) if "豆豆" in r.content
        ]:
            await session.service.aforget("u", named[0].id, hard=True)
        assert leaks(home, ["豆豆"], []) == []


async def test_small_talk_is_not_kept_raw(index: object) -> None:
    kept = await _kept_after(index, ("Morning!", "lol ok", "晚安！", "My cat Pixel is sixteen."))
    assert not {"Morning!", "lol ok", "晚安！"} & set(kept), kept
    assert "My cat Pixel is sixteen." in kept


async def test_what_the_model_reads_as_no_statement_is_not_kept_raw(index: object) -> None:
    # Read as small talk or a question, though not surely, a message that says nothing of the
    # user's would come back for questions near its words; said beside a statement, an aside
    # stays with it.
    said = (
        "haha nice one mate",
        "外面好冷啊今天",
        "recipe for pancakes without eggs",
        "My brother is called Tom, funny guy really",
    )
    kept = " | ".join(await _kept_after(index, said))
    assert "nice one" not in kept and "好冷" not in kept and "pancakes" not in kept, kept
    assert "Tom" in kept and "funny guy" in kept, kept


async def test_what_a_question_gives_as_its_context_is_not_kept_raw(index: object) -> None:
    # The clauses of a message that asks as a whole, none of which is a memory, would come
    # back for later questions near them and crowd out what the user said of themself.
    said = (
        "周末去爬山穿哪种鞋好，鞋底软一点的那种",
        "我妈下个月过生日，送她点啥好呢？",
        "My cat Pixel is sixteen.",
    )
    kept = " | ".join(await _kept_after(index, said))
    assert "鞋底软" not in kept and "我妈下个月过生日" not in kept, kept
    assert "Pixel" in kept, kept


def test_that_means_the_latest_statement_to_remember_not_a_request_after_it() -> None:
    from memory.store.records import check_user_id
    from memory.turn import Said, latest_statements, statements_of

    said = [Said("m1", "周末一般去爬山。"), Said("m2", "我想找个好吃的餐馆。")]
    user = check_user_id("u")
    ids = latest_statements(user, "t", said)
    hiking, request = (st.id for st in statements_of(user, "t", said))
    # a statement with no pronoun in it is still the one "那句" means
    assert ids[0] == hiking and request in ids


def test_what_a_user_has_one_of_answers_a_question_about_it(service: MemoryService) -> None:
    # "我在哪上班？" shares no word with "现在在小米", and nearer raw statements crowd a
    # family's candidates out (they sit just above the floor); the employer is the answer.
    source = Source(thread_id="t", said_at=T0)
    employer = "用户说：我跳槽了，现在在小米。"
    service.save(
        "u",
        Extraction(
            memories=[CandidateMemory(kind="fact", subject="work.company", content=employer)]
        ),
        source,
    )
    chatter = ["我上班路上总听播客。", "上班的地铁特别挤。", "我上班前喝一杯咖啡。",
               "我下班后去跑步。", "周末我不上班。", "我同事人都挺好。"]  # fmt: skip
    service.archive_turns("u", [(f"m{n}", text, "") for n, text in enumerate(chatter)], source)
    got = [h.record.content for h in service.search("u", "我在哪上班？", 5)]
    assert employer in got, got


def test_the_slot_answers_even_when_nothing_reaches_the_floor(service: MemoryService) -> None:
    # With few memories, every dense hit can sit under the relevance floor; the slot record
    # is lifted "level with the best match", which must not leave it under the floor too.
    source = Source(thread_id="t", said_at=T0)
    employer = "User said: Just signed on as a data analyst with an insurance outfit downtown."
    notes = [
        ("work.company", employer),
        ("habit.weekend_mornings", "User said: mostly weekend mornings."),
    ]
    memories = [CandidateMemory(kind="fact", subject=s, content=c) for s, c in notes]
    service.save("u", Extraction(memories=memories), source)
    got = [h.record.content for h in service.search("u", "Who am I employed by these days?", 5)]
    assert employer in got, got


def test_a_meal_brings_the_users_limits_before_remarks_only_the_encoder_finds_near(
    service: MemoryService,
) -> None:
    # The limits of a meal come first: remarks about restaurants and food share no word
    # with the question but sit near it for the encoder; a nut allergy (filed under health)
    # sits far from it.
    source = Source(thread_id="t", said_at=T0)
    limits = [
        ("health.nut_allergy", "User said: I'm allergic to walnuts, my lips swell up."),
        ("diet.no_fennel", "User said: I really dislike fennel."),
    ]
    near = [
        ("dates.anniversary.wedding", "User said: we celebrated our anniversary at a bistro."),
        ("work.shift", "User said: the night shift gets a free meal on Fridays."),
        ("likes.baking", "User said: I bake sourdough every weekend."),
    ]
    memories = [CandidateMemory(kind="fact", subject=s, content=c) for s, c in limits + near]
    service.save("u", Extraction(memories=memories), source)
    got = [h.record.content for h in service.search("u", "Any supper ideas?", 5)]
    assert {c for _, c in limits} == set(got[:2]), got


@pytest.mark.parametrize(
    ("said", "asked", "alone"),
    [
        (
            [
                ("possessions.car", "User said: I drive a blue Skoda Fabia."),
                ("possessions.form", "User said: the garage wants it for a form."),
                ("diet.type", "User is vegetarian."),
            ],
            "what car do I drive again? the garage wants it for a form",
            "the garage form",
        ),
        (  # five characters say as much as a long English remark
            [
                ("work.job", "用户说：我在一家物流公司做调度。"),
                ("work.asked", "用户说：明早面试用。"),
                ("diet.type", "用户吃素。"),
            ],
            "帮我写段自我介绍，明早面试用",
            "明早面试",
        ),
    ],
)
def test_a_remark_said_again_beside_a_question_is_no_answer_to_it(
    service: MemoryService, said: list[tuple[str, str]], asked: str, alone: str
) -> None:
    # Asked before, "the garage wants it for a form" was kept; asked again, it matched itself
    # far above the car, and the cut relative to the best hit dropped the car.
    save_facts(service, said, T0)
    got = [h.record.content for h in service.search("u", asked, 5)]
    assert got[0] == said[0][1], got
    assert said[1][1] not in got
    # Said as a statement of its own, it is found as ever.
    assert said[1][1] in [h.record.content for h in service.search("u", alone, 5)]


def test_a_question_kept_as_a_statement_is_no_answer_when_asked_again(
    service: MemoryService,
) -> None:
    # A question with no mark of one may be kept as a statement when first asked; asked again
    # word for word, it matched itself far above the routine it asks about, and the cut
    # relative to the best hit dropped the routine. Said again, it sets no cut.
    said = [
        ("habit.mornings", "用户说：我每天早上六点起床，先去江边跑步。"),
        ("habit.asked", "用户说：我早上起来头一件事一般干啥来着。"),
        ("diet.type", "用户吃素。"),
    ]
    save_facts(service, said, T0)
    got = [h.record.content for h in service.search("u", "我早上起来头一件事一般干啥来着", 5)]
    assert said[0][1] in got, got
    # A search for a memory's own words still finds it first.
    assert got[0] == said[1][1], got


def test_a_family_asked_about_is_not_cut_by_a_remark_sharing_a_word(
    service: MemoryService,
) -> None:
    # "cold" matches two remarks far above anything else, and the cut relative to the best
    # hit dropped what is filed under the family the model reads the question as about;
    # those come back, nearest to the question first (the dog before the car).
    save_facts(
        service,
        [
            ("possessions.car", "User said: I drive an old Volvo estate."),
            ("possessions.typewriters", "User said: I collect vintage typewriters."),
            ("possessions.whippet", "User said: our whippet Noodle turns nine in May."),
            ("likes.busstop", "User said: it was bitterly cold at the bus stop this morning."),
            ("likes.tonight", "User said: it's far too cold to go out tonight."),
        ],
        T0,
    )
    got = [
        h.record.subject
        for h in service.search("u", "is it too cold to take my pup out tonight?", 5)
    ]
    assert "possessions.whippet" in got, got
    assert got.index("possessions.whippet") < got.index("possessions.car"), got


def test_a_question_about_two_families_brings_both(service: MemoryService) -> None:
    # Read as about work first and skills second: what the user can already do belongs in
    # the answer to "should I learn to code?", though the encoder puts sewing far from it.
    save_facts(
        service,
        [
            ("work.role", "User said: I'm a paralegal at a law firm."),
            ("skills.sewing", "User said: I can sew my own clothes."),
            ("likes.ai", "User said: AI art is everywhere on my feed lately."),
            ("likes.cats", "User said: cats are better than dogs, fight me."),
            ("likes.phone", "User said: I spend far too much time on my phone."),
            ("likes.laptop", "User said: my laptop keeps overheating in the afternoons."),
            ("likes.scifi", "User said: I read a lot of sci-fi about robots."),
            ("likes.podcasts", "User said: I listen to tech podcasts on the bus."),
            ("likes.code", "User said: dress code at weddings confuses me."),
        ],
        T0,
    )
    question = "my industry is getting hammered by AI, should I learn to code?"
    got = [h.record.subject for h in service.search("u", question, 5)]
    assert "skills.sewing" in got and "work.role" in got, got


@pytest.mark.parametrize(
    ("question", "routine"),
    [
        ("工作日我都几点起床啊？", "用户说：我每天早上六点一刻起床，先去公园打拳。"),
        ("When do I normally wake up on weekdays?", "User said: I'm up at quarter to six daily."),
    ],
)
def test_a_question_asked_of_a_routine_brings_the_routine_before_dated_events(
    service: MemoryService, question: str, routine: str
) -> None:
    # Read as about the schedule, a question of when brought its dated events level with the
    # best match; asked as a routine (the kind head reads it so), the answer is a routine.
    zh = routine.startswith("用户")
    plans = (
        ["周五上午去银行办卡", "下周二下午三点开家长会", "周六早上带孩子去打疫苗",
         "明天上午十点修空调", "下周一早上八点体检"]
        if zh
        else ["Bank appointment Friday morning", "Parents' evening next Tuesday at 3pm",
              "Vaccination for the kids Saturday morning", "Boiler repair in the morning at 10",
              "Health check next Monday morning at 8am"]
    )  # fmt: skip
    memories = [
        CandidateMemory(kind="fact", subject="habit.getting_up", content=routine),
        *(
            CandidateMemory(
                kind="event", subject=f"event.plan_{n}", content=p,
                event_date=f"2026-12-{2 + n:02d}",
            )
            for n, p in enumerate(plans)
        ),
    ]  # fmt: skip
    service.save("u", Extraction(memories=memories), Source(thread_id="t", said_at=T0))
    got = [h.record.content for h in service.search("u", question, 5, now=T0) if h.why != "core"]
    assert routine in got, got
