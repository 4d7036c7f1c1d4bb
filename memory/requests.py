"""What a message asks: whether it is a question, or asks to forget, and what it names.

The understanding model decides whether a sentence asks to forget and what it points at
(`forget_requests`); the wording's span (`forget_span`) pulls out the words of a topic. The
graph, the raw archive and the summary all read a message through these, whatever model
extracts its memories (`memory.extraction`).
"""

from __future__ import annotations

import re

from memory.extraction import ForgetRequest, has_cjk, trim_phrase
from memory.recall.aliases import relation_in, relations_in
from memory.text.asking import (
    POLITE_END,
    asks_a_favour,
    asks_by_form,
    split_sentences,
    without_tag,
)
from memory.text.asking import is_filler as _is_filler
from memory.text.language import HAN, HAN_SPACE, language_of, read_form
from memory.text.phrases import JUST_SAID, TOLD, phrase_of, topic_clause, topic_words
from memory.text.statements import parts_of, split_text
from memory.understanding import FAMILY_PREFIX, Reading, read_utterance, read_utterances
from memory.understanding.model import load_model


def is_question(text: str) -> bool:
    """Return True if a sentence, or a whole message, asks rather than states.

    A message asks when at least one sentence asks and every other one is a greeting or a
    filler ("Hi! Where do I live?"); one that also states something ("我对花生过敏。你知道我
    在哪工作吗？") states, so the graph keeps it as a raw turn. Question words used as
    pronouns ("我什么都吃", "谁都知道我爱喝茶", "What I want is a dog") or in an embedded
    clause ("我不知道为什么喜欢猫") do not make a question, nor does a forget request.
    """
    sentences = [p for p in split_sentences(text) if p.strip(" \t\"'“”‘’。.,，!！?？")]
    asking = [asks_by_form(p) for p in sentences]
    if not any(asking):
        return False
    asking = [a and not forget_requests(p) for a, p in zip(asking, sentences, strict=True)]
    if not any(asking):
        return False
    return all(a or _is_filler(p) for a, p in zip(asking, sentences, strict=True))


# How a request is opened, asked or softened ("would you mind", "is it okay to", "let's").
_LEAD = (
    r"^(?:(?:please|pls|kindly|sorry|oops|wait|hmm|can you|could you|would you|will you|hey|ok"
    r"|okay|so|and|while you're at it"
    r"|also|just|actually|oh|now|then|would you mind|do you mind|mind|could you possibly"
    r"|can we|could we"
    r"|let's|maybe|why don't (?:you|we)|why not|how about (?:you|we)|i'd like you to"
    r"|i want you to"
    r"|(?:is it|would it be) (?:ok|okay|alright|possible|fine) (?:if you|for you to|to))"
    r"[ ,]+)*"
)
_DONT_KEEP = (
    r"(?:(?:you )?(?:don't|do not|dont|no need to|needn't|never|not)"
    r" (?:need to )?|(?:i'd|i would) (?:sooner|rather)(?: that)? you (?:didn't|did not|never) "
    r"|stop |i (?:don't|do not) want you to )"
    r"(?:remember|remembering|keep|keeping|store|storing|save|saving|record|recording|know"
    r"|(?:hold|hang)(?:ing)? on ?to)"
)
"""A request not to keep something, before what it names ("no need to hold on to …")."""
_FORGET_EN: list[re.Pattern[str]] = [
    re.compile(
        _LEAD + r"forget(?:ting)?(?: about| that| it all| everything(?: you know)? about| all about"
        r"| what i (?:said|told you) about| the fact that)?(?:\s+(?P<q>.*))?$",
        re.I,
    ),
    re.compile(
        _LEAD + _DONT_KEEP + r"(?: that| this| it| about)*(?:\s+(?P<q>.*?))?"
        r"(?: (?:anymore|any more|please))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:(?:delet|remov|eras|dropp?|wip|clear|purg|scrubb?)(?:e|ing)?(?: out)?"
        r"|take out|get rid of|let go of|bin|ditch|chuck(?: out| away)?) "
        r"(?:(?:everything|all|anything|whatever|what)(?: (?:that )?you (?:know|have|remember|"
        r"stored|saved|keep))?(?: about| on| of)? "
        r"|the (?:fact|memory|note|part|bit|stuff) (?:that |about )?"
        r"|any (?:memory|memories|notes?) (?:of|about) )?"
        r"(?P<q>.*?)(?: from (?:your |the )?(?:memory|memories|notes|records|mind))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:stop mentioning|don't mention|do not mention|never mention|don't bring up"
        r"|do not bring up|stop bringing up|no more talk about|drop the subject of) "
        r"(?P<q>.*?)(?: again| anymore| any more| ever again)?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:keep|leave|take|get) (?P<q>.+?) (?:out of|off|from) (?:your |the )?"
        r"(?:memory|memories|notes|records|files?|mind)(?: from now on)?$",
        re.I,
    ),
]
# Where it is kept, said before a reason ("… from your memory, I have stopped"): no topic.
_FROM_NOTES = re.compile(
    r"(?i)(?:^|\s+)(?:from (?:your |the )?(?:memory|memories|notes|records|mind)"
    r"|on (?:file|record))$"
)
# Whole sentences that take back the latest statement.
_RETRACT_EN = re.compile(
    _LEAD + r"(?:(?:scratch|strike) that(?: last (?:one|bit|thing|part))?|undo that"
    rf"|disregard (?:that|{JUST_SAID})|ignore {JUST_SAID}|never ?mind {JUST_SAID}"
    r"|that's private,? (?:don't|do not) (?:remember|keep|store) it)$",
    re.I,
)
# "forget what I just said, …": what it names is the statement before it (a closed class).
_JUST_SAID_EN = re.compile(rf"(?i)^{JUST_SAID}$")
_ZH_LEAD = (
    r"^(?:(?:请问|请|麻烦|麻烦你|你|帮我|可以|能不能|能|那|那就|还是|算了|以后|另外|还有"
    r"|哎呀|哎|唉|诶|欸|嗯|噢|哦|呃|对了)[，, ]*)*"
)
_FORGET_ZH: list[re.Pattern[str]] = [
    re.compile(
        _ZH_LEAD + r"(?:忘掉|忘记|删掉|删除|删了|去掉|清除|清掉|抹掉|抹去|移除)(?:掉)?"
        r"(?:你记得的|你记住的|你知道的)?(?:关于|有关)?(?:我的)?(?P<q>.*)$"
    ),
    re.compile(_ZH_LEAD + r"忘了(?P<q>(?:我|关于|有关|这|那|刚|它|吧|$).*)$"),
    re.compile(
        _ZH_LEAD + r"把(?P<q>.+?)(?:给|都|全)?(?:删掉|删了|删除|去掉|忘掉|忘了|忘记|清除|清掉|抹掉)"
        r"(?:吧|了|掉|啊|呀)*$"
    ),
    re.compile(
        _ZH_LEAD + r"(?:不要|别|不用|不必|无需|用不着|千万别)(?:再)?"
        r"(?:记住|记着|记下|记录|记|保存|存下|存)(?:下来|住)?(?P<q>.*)$"
    ),
    re.compile(
        _ZH_LEAD + r"(?P<q>.+?)[，,]?(?:你)?(?:也|都|就)?(?:不用|不要|别|不必|无需)(?:再)?"
        r"(?:记住|记着|记下|记录|记)(?:了|啦|吧)*$"
    ),
    re.compile(
        _ZH_LEAD
        + r"(?:不要|别|不许|不准|不用)(?:再)?(?:提起|提到|提|说起|讲)(?P<q>.*?)(?:了|啦|吧)*$"
    ),
]
# What was just said, named before it is taken back ("刚那条当我没说"): a closed class.
_JUST_SAID_ZH = r"(?:(?:刚才|刚刚|刚|上面)?(?:那条|这条|那句|这句|说的)(?:话)?)?"
_RETRACT_ZH = re.compile(
    _ZH_LEAD + _JUST_SAID_ZH + r"(?:就)?(?:当我没说(?:过)?|撤回(?:刚才|刚刚|上一句)?(?:的话|那句)?"
    r"|收回(?:刚才|刚刚)?(?:的话|那句)"
    r"|(?:刚才|刚刚|上一句|最后一句|这句|那句)(?:说的|那句|这句|的)?(?:话)?(?:给|就)?"
    r"(?:删掉|删了|删除|去掉|忘掉|忘了|撤回|不算))"
    r"(?:吧|了|啊|哈|呀|啦|哦)*$"
)


def forget_span(sentence: str) -> ForgetRequest | None:
    """Return what a forget request names, pulled out by its wording ("forget …", "把…删掉").

    Only the span: whether the sentence asks to forget at all is `forget_requests`' call.
    "That" / "这个" means what the user just said.
    """
    s = sentence.strip().rstrip("。.!！?？~～")
    if _ASKS_DONE.search(s):
        return None  # "你忘了吗？" asks whether something was forgotten
    # "…删掉吗？", "…, please?": how it is asked does not change what is asked.
    s = POLITE_END.sub("", s) or s
    # "What I just said" is asked as "that" / "这个", the words a model is told to use.
    that = "这个" if has_cjk(s) else "that"
    if _RETRACT_EN.match(s) or _RETRACT_ZH.match(s):
        return ForgetRequest(query=that)
    topic_first = _TOPIC_FIRST_ZH if has_cjk(s) else _TOPIC_FIRST_EN
    for pat in [*(_FORGET_ZH if has_cjk(s) else _FORGET_EN), topic_first]:
        m = pat.match(s)
        if m is None:
            continue
        # Asked twice over ("我表哥找工作那事 莫存了 删掉咯"): the topic is before the first.
        while pat is topic_first and (inner := pat.match(m["q"].strip(" ，,"))) is not None:
            m = inner
        # "Delete the file" is a task, not a memory: deleting needs a word about memory.
        if pat is _FORGET_EN[2] and not _ABOUT_MEMORY.search(s):
            continue
        # "刚才那句不算，我女儿还没同意，你先别记着": what it names is what was just said.
        first = _REASON_BREAK.split(m["q"] or "", maxsplit=1)[0]
        if _RETRACT_EN.match(first) or _RETRACT_ZH.match(first) or _JUST_SAID_EN.match(first):
            return ForgetRequest(query=that)
        topic = _FROM_NOTES.sub("", TOLD.sub("", trim_phrase(topic_clause(m["q"] or ""))))
        topic = _TOO.sub("", _TOO.sub("", topic))  # "take out the bit about my cousin too"
        query = _EMAIL_ADDRESS.sub(lambda e: e[1] or e[2], topic)
        return ForgetRequest(query=query or that)
    # A reason may follow a request said topic first ("…也删掉呗，最近不去了"): up to a comma.
    parts = _REASON_BREAK.split(s)
    for n in range(len(parts) - 2, 0, -2):
        head = parts[0] + "".join(parts[1:n])
        if _RETRACT_EN.match(head) or _RETRACT_ZH.match(head):
            return ForgetRequest(query=that)  # "actually scratch that, it's not sorted yet"
        if (m := topic_first.match(head)) is not None:
            # A topic that takes back what was just said is "that" ("刚那条当我没说哈，别记了").
            said_that = _RETRACT_EN.match(m.group("q")) or _RETRACT_ZH.match(m.group("q"))
            return ForgetRequest(query=that if said_that else topic_words(m.group("q")) or that)
    return None


# The topic first, then the request with a pronoun for it ("the quiz thing — please
# forget that too", "my old job, delete it").
_TOPIC_FIRST_EN = re.compile(
    r"^(?:(?:and|also|oh|plus|ok|okay|so)\s+)*(?P<q>.+?)\s*[,—–:;-]+\s*"
    r"(?:(?:please|pls|can you|could you|just|and|also)\s+)*"
    r"(?:(?:forget|delete|drop|remove|erase|wipe|scratch|clear)\s+|" + _DONT_KEEP + r"\s+)"
    r"(?:that|it|this|those|them)(?:\s+one)?(?:\s+(?:out|off|away))?"
    r"(?:[\s,]+(?:too|either|as well|also|please|thanks|from (?:your )?memory))*$",
    re.I,
)
# The topic first, with no 把 (`_FORGET_ZH` reads those), asked ("我周末打球那个也删掉呗");
# "照片都删掉了" says what was done, so it must end as a request does: with a particle that
# asks (`_ASKING_PARTICLE`), or as "don't keep it" (别, or 莫 in the south-west and Hunan).
_ASKING_PARTICLE = "吧|呗|啊|呀|哈|噻|咯|哟"
"""Sentence-final particles that make a bare verb a request (a closed class): 噻 and 咯 as
said in Hunan and Sichuan ("那条删掉噻"). Not 嘛: "X了就X了嘛" (so what if it is) is said of
what was forgotten too, and would take back the last statement."""
_TOPIC_FIRST_ZH = re.compile(
    r"^(?:(?:请|麻烦你?|另外|还有|然后|对了|哦|那就|还是)[，, ]*)*(?P<q>[^把]+?)[，,]?"
    r"(?:你)?(?:(?:也|都|就|一起|一并)?帮我)?(?:也|都|就|一起|一并)?(?:给我)?"
    rf"(?:(?:删掉|删了|删除|去掉|忘掉|忘了|清掉|抹掉)(?:{_ASKING_PARTICLE})+"
    r"|(?:别|莫|不用|不要|不必)(?:再)?(?:记住|记着|记下|记|存着|存|留着|保存)(?:了|啦|吧|呗)*)$"
)
_TOO = re.compile(r"(?i)(?:^|\s+)(?:too|as well|also|either)$|\s+(?:stuff|things|bits|info)$")
"""Words after a topic that name no part of it ("the allotment stuff too"): a closed class."""
_REASON_BREAK = re.compile(rf"(\s*[，,]\s*|{HAN_SPACE})")
_LAST_CLAUSE = re.compile(rf"\s*(?:[,，;；]|\s[-–—]\s|[—–])\s*|{HAN_SPACE}")


_ONE_WORD = re.compile(rf"[{HAN}]{{1,4}}|[A-Za-z][A-Za-z'-]*")
_ANYTHING = frozenset(
    ("东西", "什么", "它", "它们", "这些", "那些", "it", "them", "stuff", "things", "anything")
)
"""Words that stand for anything (a closed class): a span of one of them names nothing."""


ASKED_FORGET_FLOOR = 0.2
"""The forget head's probability under which a request worded as a question asks. By hand, on
the lines the head was fitted with: 107 of its 116 trap lines asked as questions ("how do I
delete …") read under it, none of the 87 requests asked as questions in train and dev (the
least 0.36)."""


def names_something(found: ForgetRequest | None, reading: Reading) -> bool:
    """Return True if a request's wording (`forget_span`) names what it would forget.

    "That" / "这个", everything (the model's target), or words the model reads as about a
    subject ("我的公司", "how old I am") or as a statement of the user's ("I want to surprise
    Lena with a trip to Kyoto"): "别提了，真倒霉" (don't bring it up, what bad luck),
    "别记仇啊" and "你能删除东西吗？" are worded the same and name nothing, and the wording is
    evidence of a request only where it names something (`forget_requests`). One word is a
    topic of its own ("不要再提熊猫了").
    """
    if found is None:
        return False
    if found.query in ("that", "这个") or reading.target == "all":
        return True
    words = found.query.strip(" ，。,.!！?？~～").rstrip("了吧啊")
    # One word is a topic ("熊猫", "chess") unless it is a word for anything at all.
    if _ONE_WORD.fullmatch(words) and words.casefold() not in _ANYTHING:
        return True
    said = read_utterance(words)
    return said.family != "none" or said.intent in ("remember", "update", "plan")


def forget_requests(sentence: str) -> list[ForgetRequest]:
    """Return the forget request a sentence makes, if the understanding model reads one.

    The model decides whether the sentence asks to forget ("I never forget birthdays" does
    not; "Oops, take that back." does) and what it points at: "that" (the previous
    statement), a subject family, or everything, whether the request is asked ("Do you
    mind dropping the notes on my cousin?") or not; a question about memory ("Have I told
    you about my job?") is the model's to tell apart. Its words are the wording's where a
    pattern knows it (`forget_span`), else the sentence's less its request words. A
    sentence in traditional Chinese is read, and its words given, in simplified characters,
    and one in Scots in standard words (`read_form`); what they name is matched in either
    script (`memory.text.phrases.states`).
    """
    sentence = read_form(sentence)
    reading = read_utterance(sentence)
    found = forget_span(sentence)
    # An interjection first ("Oh god, forget what I just said, …", "哎呀，…"): the request
    # is what follows it.
    opening, *rest = _REASON_BREAK.split(sentence.strip(), maxsplit=1)
    if found is None and rest and _is_filler(opening) and forget_span(rest[-1]) is not None:
        return forget_requests(rest[-1])
    # Said first, then why ("wait, forget that, Jo can't come"): both heads read the request.
    head = _REASON_BREAK.split(sentence.strip(), maxsplit=1)[0]
    if found is None and reading.intent != "forget" and head != sentence.strip():
        first = read_utterance(head)
        if first.intent == "forget" and min(first.forget_head, reading.forget_head) >= 0.5:
            return forget_requests(head)
    # Why first, then the request, naming what ("got a new phone, delete my old number"): the
    # forget head reads the whole and the request (0.5, as for "that"), which is read alone.
    # A request that names nothing ("我住哪儿这个信息，麻烦帮我忘掉") is about what came first.
    tail = _LAST_CLAUSE.split(sentence.strip())[-1]
    span = forget_span(tail) if found is None and tail != sentence.strip() else None
    named = span is not None and span.query not in ("that", "这个")
    if named and min(read_utterance(tail).forget_head, reading.forget_head) >= 0.5:
        return forget_requests(tail)
    # Worded, the intent head need only not rule it out (floor chosen out of fold); unworded,
    # both heads read forget likelier than not ("帮我把这段话里的错别字删掉": 0.91 and 0.16).
    worded = names_something(found, reading)
    floor = load_model().span_floor(language_of(sentence))
    if reading.intent != "forget" and (not worded or reading.forget < floor):
        return []
    if not worded and reading.forget_head < 0.5:
        return []
    # Asked as a favour ("Would you mind dropping …?", "能不能别记…？", "…, ok?") it is one;
    # asked whether it was done ("Have you deleted my address") it asks (`memory.text.asking`),
    # and so does a question worded like one that the forget head, fitted with how-to
    # questions, all but rules out ("删除的短信还能找回来吗？", can deleted texts be recovered:
    # 0.03; "请忘记我在哪里工作" 0.31).
    asked = asks_by_form(without_tag(sentence)) and not asks_a_favour(sentence)
    if asked and (found is None or reading.forget_head < ASKED_FORGET_FLOOR):
        return []
    that = "这个" if has_cjk(sentence) else "that"
    if reading.target == "that" and found is None and (topic := _named_first(sentence)):
        return [ForgetRequest(query=topic)]
    if reading.target == "that":
        # Read as taking back the last statement, "remove the last line from that card
        # verse" is about a text: unworded, the forget head must say so too (`_says_that`).
        said_that = found is not None and found.query == that
        # A topic said first, then "that" ("the knee thing I told you about, can you not keep
        # that?"), names the topic, however the whole is read; unless the topic is itself
        # what was just said ("wait actually nvm that last bit, dont save it").
        topic = found.query if found is not None and not said_that else ""
        if topic and _topic_first(sentence) and read_utterance(topic).target != "that":
            return [ForgetRequest(query=topic)]
        return [ForgetRequest(query=that)] if said_that or _says_that(sentence) else []
    if found is None:
        found = ForgetRequest(query=_topic_words(sentence) or that)
    query = _ZH_ADDRESSEE.sub("", found.query) or found.query
    subject = found.subject
    # "my husband" is all that is filed about him; a relative named in the reason only
    # ("…the allotment. my brother wants it kept quiet") is not what is asked. The topic's
    # words are read on their own too, and a relative they name comes first: "还有我对象那条，
    # 帮我删了吧，最近有点情况" reads whole as about another family than its topic.
    # Of two relatives ("my sister and my mum", "我先生和女儿的事"), each is asked about:
    # filed under the first alone, the second's statements stayed.
    relatives = relations_in(query) if subject is None and reading.target == "family" else {}
    if len(relatives) > 1 and "family" in (reading.family, read_utterance(query).family):
        return [
            ForgetRequest(query=word, subject=f"{FAMILY_PREFIX['family']}.{who}" if who else None)
            for word in relatives.values()
            for who in [relation_in(word)]
        ]
    # A relative named after the thing a topic is about ("the music thing wey my grandpa
    # taught me") is no topic of their own: the thing is, and the other clauses said with it.
    thing = _THING_FIRST.match(query)
    by_relative = reading.target == "family" and (
        thing is None or relation_in(thing[0]) is not None
    )
    who = relation_in(query) if subject is None and by_relative else None
    if who is not None and "family" in (reading.family, read_utterance(query).family):
        subject = f"{FAMILY_PREFIX['family']}.{who}"
    elif subject is None and reading.target == "family" and reading.family in _ONE_VALUE:
        subject = FAMILY_PREFIX[reading.family]
    return [ForgetRequest(query=query, subject=subject)]


def _topic_first(sentence: str) -> re.Match[str] | None:
    """Return the match of a request said topic first ("my old job, delete it"), or None."""
    s = POLITE_END.sub("", sentence.strip().rstrip("。.!！?？~～")) or sentence
    return (_TOPIC_FIRST_ZH if has_cjk(s) else _TOPIC_FIRST_EN).match(s.strip())


def _named_first(sentence: str) -> str:
    """Return the topic a request names before it points at it with "that", or "".

    "hey the knee thing i mentioned, can u not keep that?" reads whole as taking back the
    last statement; its first part, read as a request about a subject, is what "that" is.
    """
    parts = parts_of(sentence)[1:]
    if len(parts) < 2:
        return ""
    # Forget the likelier reading of each (0.5, by hand, as `_says_that`).
    first, *rest = read_utterances(parts)
    if first.target != "family" or first.family not in FAMILY_PREFIX or first.forget < 0.5:
        return ""
    if not any(r.target == "that" and r.forget >= 0.5 for r in rest):
        return ""
    return _topic_words(parts[0])


def _says_that(sentence: str) -> bool:
    """Return True if a part of a sentence read as "that" says so itself (or its one part).

    "That" takes back a whole message (`memory.lifecycle.forget_targets`): in "actually
    scratch that last thing, don't keep it" the first part says it; in "don't worry about
    formatting, just give me the list", read whole as "that", no part does.
    """
    # An interjection is no part ("Hmm, would you mind discarding what I've just told you?"):
    # with it alone beside the request, the request is read whole.
    parts = [p for p in parts_of(sentence)[1:] if not _is_filler(p)]
    parts = parts if len(parts) > 1 else [sentence]
    # Forget is the likelier reading (0.5, by hand, not tuned) of both heads: the forget head
    # has read requests about a text ("drop the last bullet point from that list").
    readings = read_utterances(parts)
    return any(r.target == "that" and min(r.forget, r.forget_head) >= 0.5 for r in readings)


def _topic_words(sentence: str) -> str:
    """Return the words a forget request names its topic by, without its request words.

    Of a sentence of several clauses only those the model reads as about a subject count:
    "我吃药那个事儿你别存着了，挺隐私的" names 吃药, not why it is private.
    """
    clauses = split_text(sentence)
    if len(clauses) > 1:
        readings = read_utterances(clauses)
        # The clause that asks names what to forget when it names anything: "bin what i said
        # about the allotment. my brother wants it kept quiet" is about the allotment, though
        # the reason speaks of a relative.
        asking = max(range(len(clauses)), key=lambda i: readings[i].forget)
        own = topic_words(TOLD.sub("", clauses[asking]))
        if readings[asking].forget >= 0.5 and phrase_of(own, request=True):
            return own
        about = [c for c, r in zip(clauses, readings, strict=True) if r.family != "none"]
        clauses = about or clauses
    return topic_words(" ".join(clauses))


_THING_FIRST = re.compile(r"(?i)the\s+(?:\w+\s+){1,2}?(?:thing|stuff|bit|business)\b")
"""A topic that names a thing first ("the music thing …"), not a relative."""


# Families with one value per user: the family alone says which record ("stop storing my
# location"). Other families hold many (a sister and a brother), so only words pick them.
_ONE_VALUE = frozenset({"home", "name", "age"})
_ZH_ADDRESSEE = re.compile(r"(?:你|您)(?:就|都)?$")


# "你忘了吗？", "你删了我的地址吗": asks whether it was done (an object may come between).
_ASKS_DONE = re.compile(r"(?:忘掉|忘记|忘|删掉|删除|删)了[^吧，,。]{0,12}?(?:吗|么|没有?)$")
# "my email address" names the email, not where the user lives (the `address` alias).
_EMAIL_ADDRESS = re.compile(r"(?i)\b(e-?mail|mail)\s+address\b|(邮箱|电子邮件|邮件)地址")


_ABOUT_MEMORY = re.compile(
    r"(?i)\b(?:my|mine|about|you know|you have|you remember|memory|memories|notes|records"
    r"|that|this|it|everything)\b"
)


def asks_to_forget(text: str) -> bool:
    """Return True if a message asks to forget something ("forget that …", "别记这个")."""
    sentences = split_sentences(text)
    if sentences:
        read_utterances(sentences)  # one encoder batch for the message
    return any(forget_requests(s) for s in sentences)
