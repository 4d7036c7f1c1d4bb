"""The fresh set through the compiled graph with the offline model (issue 22, "Done when").

`run_fresh(lang, home)` plays `benchmarks/data/understanding_fresh.json` to the real graph on
the embedded default (SQLite store and checkpointer, embedded Chroma) in `home`, the way a
new user would, and returns what it measured:

* **typed**: of the statements, said one per turn among the distractors, how many left a
  typed memory (not only the raw turn);
* **recalled**: how many a natural question, asked in a new thread, brings in the top 5;
* **updates**: for each (before, after) pair, said by a user of its own in two threads, a
  question in a third thread answers with the new value only: the new value is recalled and
  nothing recalled or answered states the old one without the new one;
* **forgets**: each request, said in the statements' thread, removes its item (none of its
  words is left in anything kept for the user, raw statements included) and keeps the rest
  (every other statement still recalled by its question);
* **dinner**: "any dinner idea?" recalls each food constraint.

The benchmark (`benchmarks/understanding.py --graph`) prints it as JSON and the integration
test (`tests/integration/test_fresh_set.py`) holds it to the targets. Nothing here is used
for training or tuning. Free of import side effects, so tests can import it.
"""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
FRESH_SETS = {
    "fresh": DATA / "understanding_fresh.json",
    "fresh2": DATA / "understanding_fresh2.json",
    "fresh3": DATA / "understanding_fresh3.json",
    "fresh4": DATA / "understanding_fresh4.json",
    "fresh5": DATA / "understanding_fresh5.json",
    "fresh6": DATA / "understanding_fresh6.json",
    "fresh7": DATA / "understanding_fresh7.json",
    "fresh8": DATA / "understanding_fresh8.json",
    "fresh9": DATA / "understanding_fresh9.json",
    "fresh10": DATA / "understanding_fresh10.json",
    "fresh11": DATA / "understanding_fresh11.json",
    "fresh12": DATA / "understanding_fresh12.json",
    "fresh13": DATA / "understanding_fresh13.json",
    "fresh14": DATA / "understanding_fresh14.json",
    "fresh15": DATA / "understanding_fresh15.json",
    "fresh16": DATA / "understanding_fresh16.json",
    "fresh17": DATA / "understanding_fresh17.json",
    "fresh18": DATA / "understanding_fresh18.json",
    "fresh19": DATA / "understanding_fresh19.json",
    "fresh20": DATA / "understanding_fresh20.json",
    "fresh21": DATA / "understanding_fresh21.json",
    "fresh22": DATA / "understanding_fresh22.json",
    "fresh23": DATA / "understanding_fresh23.json",
    "fresh24": DATA / "understanding_fresh24.json",
    "fresh25": DATA / "understanding_fresh25.json",
    "fresh26": DATA / "understanding_fresh26.json",
    "fresh27": DATA / "understanding_fresh27.json",
    "fresh28": DATA / "understanding_fresh28.json",
    "fresh29": DATA / "understanding_fresh29.json",
    "fresh30": DATA / "understanding_fresh30.json",
    "fresh31": DATA / "understanding_fresh31.json",
    "fresh32": DATA / "understanding_fresh32.json",
    "fresh33": DATA / "understanding_fresh33.json",
    "fresh34": DATA / "understanding_fresh34.json",
    "fresh35": DATA / "understanding_fresh35.json",
    "fresh36": DATA / "understanding_fresh36.json",
    "fresh37": DATA / "understanding_fresh37.json",
    "fresh38": DATA / "understanding_fresh38.json",
    "fresh39": DATA / "understanding_fresh39.json",
    "fresh40": DATA / "understanding_fresh40.json",
    "fresh41": DATA / "understanding_fresh41.json",
    "fresh42": DATA / "understanding_fresh42.json",
    "fresh43": DATA / "understanding_fresh43.json",
    "fresh44": DATA / "understanding_fresh44.json",
    "fresh45": DATA / "understanding_fresh45.json",
    "fresh46": DATA / "understanding_fresh46.json",
    "fresh47": DATA / "understanding_fresh47.json",
    "fresh48": DATA / "understanding_fresh48.json",
    "fresh49": DATA / "understanding_fresh49.json",
    "fresh50": DATA / "understanding_fresh50.json",
    "fresh51": DATA / "understanding_fresh51.json",
    "fresh52": DATA / "understanding_fresh52.json",
    "fresh53": DATA / "understanding_fresh53.json",
    "fresh54": DATA / "understanding_fresh54.json",
    "fresh55": DATA / "understanding_fresh55.json",
}
"""The fresh sets: the first written by the project after training (its misses were then
read, and train-only corpus lines written for them), the second written blind by a second
author who saw no rule, corpus line or test, after the misses of the first were fixed, the
third written blind by a third author while the second's classes of misses were worked on,
and run only once that work was merged; the fourth likewise, by a fourth author, while the
third's misses were worked on (nobody working on them read it); the fifth likewise, by a
fifth author, while the fourth's misses were worked on; the sixth likewise, by a sixth
author, while the fifth's misses were worked on; the seventh likewise, by a seventh author,
while the sixth's misses were worked on; the eighth likewise, by an eighth author, while the
seventh's misses were worked on; the ninth to the fourteenth likewise, each by an author of
its own, while the misses of the one before were worked on (the twelfth, run once all of a
stop's work was in; the thirteenth, first run before any of the next stop's work; the
fourteenth, kept unread until that stop's work was nearly in). The fifteenth and sixteenth
were first run before any of the next stop's work, and some of their phrasings were then
given as examples in the brief of a training corpus, so only their first runs are blind;
the seventeenth was kept unread until that stop's work was in. The eighteenth and
nineteenth were first run before any of the next stop's work, and their misses then read;
the twentieth was first run, unread, once part of that work was in, and read after; the
twenty-first was kept unread until that stop's work was in, then read and worked on; the
twenty-second was kept unread until all of it was in. The twenty-third was first run before
any of the next stop's work, then read; the twenty-fourth was kept unread until all of that
stop's work was in. The twenty-fifth was first run before any of the next stop's work, then
read; the twenty-sixth was kept unread until all of that stop's work was in. The
twenty-seventh and twenty-eighth were first run before any of the next stop's work, then
read; the twenty-ninth was kept unread until nearly all of that stop's work was in. The
thirtieth and thirty-first were first run before any of the next stop's work, kept unread
until about half of it was in, then read. The thirty-second and thirty-third were first run
before any of the next stop's work and kept unread until the end of it (no change of
behaviour landed in it). The thirty-fourth and thirty-fifth were first run before any of the
next stop's work and kept unread until its first changes of behaviour were in, then read; so
were the thirty-sixth and thirty-seventh. The thirty-eighth was first run before any of the
next stop's work and read then; the thirty-ninth was kept unread until that stop's work was
in, run again, then read. The fortieth was first run before any of the next stop's work and
read then; the forty-first was kept unread until that stop's first work was in, run again,
then read; so were the forty-second (read at once) and the forty-third (kept unread until
that stop's first work was in), and the forty-fourth (read at once) and the forty-fifth
(kept unread until that stop's first work was in), and the forty-sixth (read at once) and the
forty-seventh (kept unread until that stop's first work was in), and the forty-eighth (read
at once) and the forty-ninth (kept unread until that stop's work was in, though a listing of
failed forget checks showed its failing requests). The fiftieth was read at once and the
fifty-first kept unread until that stop's work was in; the fifty-second was read at once and
the fifty-third kept unread until that stop's first work was in; so were the fifty-fourth
(read at once) and the fifty-fifth (kept unread until that stop's first work was in)."""
TOP = 5
"""A statement is recalled when it is among the first `TOP` memories of a turn."""


def load_fresh(name: str = "fresh") -> dict[str, Any]:
    """Return a fresh set (`FRESH_SETS`)."""
    data: dict[str, Any] = json.loads(FRESH_SETS[name].read_text(encoding="utf-8"))
    return data


def _says(text: str, words: list[str]) -> bool:
    low = text.casefold()
    return any(w.casefold() in low for w in words)


def _typed(saved: list[str]) -> bool:
    """Return True if a turn's save lines show a typed memory (not only a raw statement)."""
    return any(
        line.split(":", 1)[0] in ("added", "reinforced", "promoted", "merged")
        and not line.split("] ", 1)[0].endswith(("episode", "turn"))
        and "[episode " not in line
        for line in saved
    )


async def run_fresh(
    lang: str, home: str, name: str = "fresh", day: date | None = None
) -> dict[str, Any]:
    """Play one language of a fresh set through the compiled graph; return the figures.

    Args:
        lang: `en` or `zh`.
        home: An empty folder for the embedded stores.
        name: The set (`FRESH_SETS`).
        day: Said on this day, a second apart, instead of now. The sets name dates ("the
            3rd of november", "10月20号") that were ahead when they were written: against the
            clock, an event whose day has passed leaves recall, and a part's figures move with
            the day the benchmark runs. A fixed day makes runs on different days comparable:
            each turn is read, written and recalled as of its own time
            (`memory.store.records.as_of`).
    """
    from agent.runner import open_session
    from graphs.settings import Settings
    from memory.backends import BackendConfig

    seconds = itertools.count()

    def said_at() -> str | None:
        start = datetime.combine(day, time(9), tzinfo=UTC) if day is not None else None
        return None if start is None else (start + timedelta(seconds=next(seconds))).isoformat()

    part = load_fresh(name)[lang]
    statements: list[str] = part["statements"]
    questions: list[tuple[str, list[str]]] = [(q, w) for q, w in part["questions"]]
    distractors: list[str] = part["distractors"]
    last = int(part["last_statement"])
    run = uuid.uuid4().hex[:6]
    settings = Settings(backend=BackendConfig(home=home), model="offline")
    out: dict[str, Any] = {"lang": lang}
    async with open_session(settings) as s:

        async def recalled(user: str, question: str) -> tuple[list[str], str]:
            res = await s.turn(
                user, f"{user}-q-{uuid.uuid4().hex[:6]}", question, turn_time=said_at()
            )
            # A clause comes with what was said with it in its message (`Recalled.said_with`):
            # one place of the top, as the prompt lists it.
            shown = [" · ".join([r["content"], *r.get("said_with", [])]) for r in res.recalled]
            return shown[:TOP], res.reply

        async def kept(user: str) -> str:
            return " | ".join(r.content for r in await s.service.alist(user, include_turns=True))

        # 1. Statements among distractors, one thread; the one a deictic forget takes back last.
        user, thread = f"fresh-{lang}-{run}", f"fresh-{lang}-{run}-main"
        order = [i for i in range(len(statements)) if i != last] + [last]
        script: list[tuple[int | None, str]] = []
        gaps = iter(distractors)
        for n, i in enumerate(order):
            script += [(None, d) for d in [next(gaps, None), next(gaps, None)] if d and n < 10]
            script.append((i, statements[i]))
        script = [(None, d) for d in gaps] + script  # distractors left over open the thread
        typed: dict[int, bool] = {}
        for at, text in script:
            res = await s.turn(user, thread, text, turn_time=said_at())
            if at is not None:
                typed[at] = _typed(res.saved)
        out["typed"] = sum(typed.values())
        out["untyped"] = [statements[i] for i in sorted(typed) if not typed[i]]
        out["distractors"] = len(distractors)

        # 2. Each statement recalled by a natural question (a new thread each).
        missed = []
        for i, (question, words) in enumerate(questions):
            got, _ = await recalled(user, question)
            if not any(_says(g, words) for g in got):
                missed.append({"statement": statements[i], "question": question, "top": got})
        out["recalled"] = len(questions) - len(missed)
        out["not_recalled"] = missed

        # 3. Food constraints for a dinner idea.
        dinner = part["dinner"]
        got, _ = await recalled(user, dinner["question"])
        brought = [words for words in dinner["brings"] if any(_says(g, words) for g in got)]
        out["dinner"] = {"brings": len(brought), "of": len(dinner["brings"]), "top": got}

        # 4. Updates: each pair by a user of its own, then a question in a new thread.
        updates = []
        for n, ((before, after), (question, new, old)) in enumerate(
            zip(part["updates"], part["update_checks"], strict=True)
        ):
            who = f"fresh-{lang}-{run}-u{n}"
            await s.turn(who, f"{who}-a", before, turn_time=said_at())
            await s.turn(who, f"{who}-b", after, turn_time=said_at())
            got, reply = await recalled(who, question)
            stale = [g for g in got if _says(g, [old]) and not _says(g, [new])]
            ok = any(_says(g, [new]) for g in got) and not stale
            updates.append({"update": after, "ok": ok, "top": got, "reply": reply})
        out["updates"] = sum(u["ok"] for u in updates)
        out["update_details"] = [u for u in updates if not u["ok"]]

        # 5. Forgets, in the statements' thread: the item goes, the rest stays.
        forgets = []
        removed: set[int] = set()
        for request, check in zip(part["forgets"], part["forget_checks"], strict=True):
            res = await s.turn(user, thread, request, turn_time=said_at())
            target = last if check["removes"] == "last" else int(check["removes"])
            removed.add(target)
            left = await kept(user)
            gone = not _says(left, check["gone"])
            lost = []
            for i, (question, words) in enumerate(questions):
                if i in removed:
                    continue
                got, _ = await recalled(user, question)
                if not any(_says(g, words) for g in got):
                    lost.append(statements[i])
            forgets.append(
                {"request": request, "removed": gone, "kept_the_rest": not lost,
                 "lost": lost, "saved": res.saved}
            )  # fmt: skip
        out["forgets"] = sum(f["removed"] and f["kept_the_rest"] for f in forgets)
        out["forget_details"] = [f for f in forgets if not (f["removed"] and f["kept_the_rest"])]
    return out
