"""What a slot's new value reads: by subject and by prefix in the store, never a full scan.

A move ends what was said about the old home (`home.*`), a new employer what was said about
the old job (`work.*`, not the role): `StoreReader.filed_under` asks the SQLite and Postgres
stores for a range of subjects, and scans stores that cannot compare strings (the in-memory
store `langgraph dev` uses). On each, and on a Postgres database whose text sorts by ICU's
English collation (not by bytes, as the test database does), it returns the same records:
every `work` and `work.*` record that is recallable, and nothing filed under `workshop`,
nothing superseded or expired, nothing of another user or kind.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from memory.backends import BackendConfig, open_backends
from memory.store.reads import StoreReader
from memory.store.records import MemoryRecord, namespace, utcnow

pytestmark = pytest.mark.integration


ICU_DB = "memory_agent_icu"


def _icu_url(pg_url: str) -> str:
    """Return the URL of a database that sorts text by ICU's en-US collation (made once)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if not conn.execute("select 1 from pg_database where datname = %s", (ICU_DB,)).fetchone():
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(
                    f"create database {ICU_DB} template template0 locale_provider icu "
                    "icu_locale 'en-US' locale 'C.UTF-8'"
                )
    url = psycopg.conninfo.make_conninfo(pg_url, dbname=ICU_DB)
    with psycopg.connect(url) as conn:
        # Not byte order: bytes put 'B' before 'a', English puts 'a' first.
        assert conn.execute("select 'a' < 'B'").fetchone() == (True,)
    return url


@contextmanager
def _store(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    if name == "memory":
        yield InMemoryStore()
        return
    if name == "sqlite":
        config = BackendConfig(home=str(tmp_path / "home"))
    elif name == "postgres":
        config = BackendConfig(database_url=request.getfixturevalue("pg_url"))
    else:
        config = BackendConfig(database_url=_icu_url(request.getfixturevalue("pg_url")))
    with open_backends(config, setup=name == "postgres-icu") as b:
        yield b.store


@pytest.mark.parametrize("name", ["memory", "sqlite", "postgres", "postgres-icu"])
def test_filed_under_reads_the_slot_and_its_prefixes_only(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    make: Callable[[str], str] = (
        request.getfixturevalue("new_user") if name == "postgres" else (lambda label: label)
    )
    if name == "postgres-icu":  # a database of its own: fresh users each run
        make = lambda label: f"{label}-{uuid.uuid4().hex[:8]}"  # noqa: E731
    user, other = make("slot-a"), make("slot-b")
    now = utcnow()

    def rec(n: int, subject: str, *, who: str = user, kind: str = "fact", **kw: Any) -> Any:
        r = MemoryRecord(
            id=f"r{n}", user_id=who, kind=kind, subject=subject, content=f"Note {n}.", **kw
        )
        return PutOp(namespace(who, kind), r.id, r.to_store())

    with _store(name, tmp_path, request) as store:
        store.batch(
            [
                rec(1, "work.company"),
                rec(2, "work"),
                rec(3, "work.team.size"),
                rec(4, "workshop.tools"),  # inside the letter range, not under `work`
                rec(5, "work.team", status="superseded"),
                rec(6, "work.project", expires_at=now - timedelta(days=1)),
                rec(7, "work.team", who=other),
                rec(8, "work.team", kind="preference"),
                rec(9, "profile.city"),
                rec(10, "Work.team"),  # a collation may order it inside: not the prefix
                rec(11, "work.place"),
            ]
        )
        reader = StoreReader(store, "memory-agent", None)
        got = reader.filed_under(user, "fact", ("work.company", "work.place"), ("work",))
        assert sorted(r.id for r in got) == ["r1", "r11", "r2", "r3"]
        homes = reader.filed_under(user, "fact", ("profile.city",), ("home",))
        assert [r.id for r in homes] == ["r9"]
