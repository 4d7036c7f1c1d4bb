"""Lexical snapshots: one user's BM25 index and records, in memory and as bytes.

Per-user registry
    `LexicalIndexes` keeps one `UserIndex` (a `BM25Index`, ``{id: record}`` and the
    records worth pinning) per user for the memory service: `build` makes it from the
    store, `install` puts one read back from bytes, `upsert` / `remove` follow the store's
    writes and deletes, `advance` moves its version along with the writer's change log,
    and `drop` forgets a user.

Persisted snapshots
    `dump_snapshot` / `load_snapshot` turn a `UserIndex` into bytes and back (no pickle:
    a JSON header, ids and terms, little-endian arrays, CRC-32). Loading builds no object
    per posting or per record: the postings stay arrays (`BM25Index.from_export`, a
    read-only base layer that later writes go around, not through), and records are
    decoded on first access (`LazyRecords`). 100k memories load in about 0.1-0.3 s where
    building from the store took 9-18 s. Where the bytes live: `memory.lexical.changes`.
"""

from __future__ import annotations

import bisect
import math
import operator
import re
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from memory.lexical.bm25 import BM25Index, Postings

__all__ = [
    "LexicalIndexes",
    "OrderedRecords",
    "SnapshotError",
    "UserIndex",
    "dump_snapshot",
    "load_snapshot",
    "record_fields",
    "snapshot_version",
]


def record_fields(record: Any) -> tuple[str, list[tuple[str, float]]]:
    """Return what a memory record contributes to the lexical index.

    The content, plus its subject key ("diet.avoid.spicy" → "diet avoid spicy") at half
    weight when the record has one (not for raw turns), plus each neighbouring turn of a
    raw-turn episode (`value["context"]`, a string or a list) at half weight.
    """
    subject = getattr(record, "subject", None) or ""
    extra: list[tuple[str, float]] = []
    if subject and not subject.startswith("episode."):  # a raw turn's subject says nothing
        extra.append((re.sub(r"[._\-]+", " ", subject), 0.5))
    # Raw turns carry their neighbouring turns, each a field of its own: a question often
    # names what the neighbours said (on LoCoMo this is worth +0.09 recall@5).
    extra.extend((c, 0.5) for c in getattr(record, "context", ()))
    return record.content, extra


PinKey = tuple[str, float]
"""Where a record is kept among a user's pinned records: a group and its order in it."""


class OrderedRecords:
    """Records kept in order of a number, read by range without a pass over them all."""

    def __init__(self, source: Mapping[Any, Any] | None = None) -> None:
        """Create an empty list.

        Args:
            source: Where records placed by id alone (`place`) are read from when listed,
                e.g. the lazily decoded records of a loaded snapshot.
        """
        self._order: list[tuple[float, str]] = []
        self._by_id: dict[str, tuple[float, Any]] = {}
        self._source = source

    def __len__(self) -> int:
        return len(self._by_id)

    def put(self, key: float, record: Any) -> None:
        """Add a record (by ``record.id``) at `key`, moving it if it was elsewhere."""
        self.discard(record.id)
        bisect.insort(self._order, (key, record.id))
        self._by_id[record.id] = (key, record)

    def place(self, entries: Iterable[tuple[float, str]]) -> None:
        """Add records by `(key, id)`, in order, read from `source` when listed (a new list)."""
        assert not self._by_id and self._source is not None, "place fills a new list"
        self._order = list(entries)
        self._by_id = {rid: (key, None) for key, rid in self._order}

    def entries(self) -> list[tuple[float, str]]:
        """Return every `(key, id)`, in key order."""
        return list(self._order)

    def discard(self, record_id: str) -> None:
        """Remove a record if it is here."""
        old = self._by_id.pop(record_id, None)
        if old is not None:
            i = bisect.bisect_left(self._order, (old[0], record_id))
            if i < len(self._order) and self._order[i] == (old[0], record_id):
                del self._order[i]

    def between(self, lo: float = -math.inf, hi: float = math.inf) -> Iterator[Any]:
        """Yield the records with ``lo <= key <= hi``, in key order.

        The range is fixed when the call is made; records removed since are skipped.
        """
        i = bisect.bisect_left(self._order, (lo, ""))
        j = bisect.bisect_right(self._order, (hi, "\uffff"))
        for _, rid in self._order[i:j]:
            found = self._by_id.get(rid)
            if found is not None:
                if found[1] is not None:
                    yield found[1]
                elif self._source is not None and rid in self._source:
                    yield self._source[rid]


class LazyRecords(MutableMapping[Any, Any]):
    """``{id: record}`` whose records are decoded from their bytes on first access.

    A loaded snapshot holds 100k records; decoding them all took seconds, while a search
    reads a few hundred.
    """

    def __init__(
        self,
        ids: list[Any],
        blob: bytes | memoryview,
        offsets: np.ndarray,
        decode: Callable[[bytes], Any],
        *,
        slots: dict[Any, Any] | None = None,
    ) -> None:
        """Create it over records encoded back to back.

        Args:
            ids: The record ids, in the order of the encoded records.
            blob: The encoded records.
            offsets: Record `i` is ``blob[offsets[i]:offsets[i+1]]``.
            decode: Turns one record's bytes into the record.
            slots: ``{id: position in ids}`` if the caller has it (then owned by this).
        """
        self._items: dict[Any, Any] = (
            slots if slots is not None else dict(zip(ids, range(len(ids)), strict=True))
        )
        self._blob = memoryview(blob)
        self._offsets: list[int] = offsets.tolist()
        self._decode = decode
        self._decoded: set[Any] = set()

    def raw(self, record_id: Any) -> memoryview | None:
        """Return a record's bytes if it was never decoded nor replaced (else None)."""
        if record_id in self._decoded:
            return None
        i = self._items[record_id]
        return self._blob[self._offsets[i] : self._offsets[i + 1]]

    def __getitem__(self, record_id: Any) -> Any:
        value = self._items[record_id]
        if record_id not in self._decoded:
            raw = bytes(self._blob[self._offsets[value] : self._offsets[value + 1]])
            value = self._items[record_id] = self._decode(raw)
            self._decoded.add(record_id)
        return value

    def __setitem__(self, record_id: Any, record: Any) -> None:
        self._items[record_id] = record
        self._decoded.add(record_id)

    def __delitem__(self, record_id: Any) -> None:
        del self._items[record_id]
        self._decoded.discard(record_id)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._items


@dataclass
class UserIndex:
    """What `LexicalIndexes` holds for one user."""

    bm25: BM25Index[Any]
    records: MutableMapping[Any, Any]
    """``{id: record}`` of every indexed record (a `LazyRecords` when loaded from bytes)."""
    pinned: dict[str, OrderedRecords]
    """Per group, the records the registry's `pin` function placed there (a subset of
    `records`), so that "always show" candidates are found without a pass over all."""
    version: str = ""
    """The store change-log head this snapshot reflects (see `MemoryService`)."""
    encoded: dict[Any, tuple[Any, tuple[Any, ...], bytes]] = field(default_factory=dict)
    """``{id: (record, its words, its bytes)}`` from the last `dump_snapshot`: a record that
    is still the same object with the same words is not encoded again (a purge rewrites the
    whole copy after each supersede; at 10k records, encoding them was most of a save)."""


class LexicalIndexes:
    """One `BM25Index` (and the records it indexes) per user, kept in memory.

    Built from the store on first use (`build`), updated in place by `upsert` / `remove`
    after each store write. Whether a snapshot is still current is the caller's business:
    each one carries the `version` it was built or last caught up at. Users beyond
    `max_users` are evicted least recently used first.
    """

    def __init__(
        self, *, max_users: int = 256, pin: Callable[[Any], PinKey | None] | None = None
    ) -> None:
        """Create an empty registry.

        Args:
            max_users: How many users' indexes are kept.
            pin: Returns where a record goes in `UserIndex.pinned` (group, order), or None.
        """
        self.max_users = max_users
        self._pin = pin or (lambda _rec: None)
        self._entries: OrderedDict[str, UserIndex] = OrderedDict()
        self._lock = threading.Lock()

    def peek(self, user_id: str) -> UserIndex | None:
        """Return the user's snapshot if one is loaded."""
        with self._lock:
            entry = self._entries.get(user_id)
            if entry is not None:
                self._entries.move_to_end(user_id)
            return entry

    def build(self, user_id: str, records: Iterable[Any], version: str = "") -> UserIndex:
        """Index a user's recallable records, replacing any snapshot of that user.

        Args:
            user_id: Whose records.
            records: Records with ``id`` and ``content`` (see `record_fields`).
            version: The change-log version the records were read at.
        """
        entry = UserIndex(BM25Index(), {}, {}, version)
        for rec in records:
            self._add(entry, rec)
        return self.install(user_id, entry)

    def install(self, user_id: str, entry: UserIndex) -> UserIndex:
        """Make `entry` the user's snapshot (e.g. one loaded by `load_snapshot`)."""
        with self._lock:
            self._entries[user_id] = entry
            self._entries.move_to_end(user_id)
            while len(self._entries) > self.max_users:
                self._entries.popitem(last=False)
        return entry

    def _add(self, entry: UserIndex, rec: Any) -> None:
        text, extra = record_fields(rec)
        entry.bm25.add(rec.id, text, extra=extra)
        entry.records[rec.id] = rec
        for ordered in entry.pinned.values():
            ordered.discard(rec.id)
        pin = self._pin(rec)
        if pin is not None:
            entry.pinned.setdefault(pin[0], OrderedRecords(entry.records)).put(pin[1], rec)

    def upsert(self, user_id: str, records: Iterable[Any]) -> None:
        """Index (or re-index) records of a user whose index is loaded; else do nothing."""
        entry = self.peek(user_id)
        if entry is not None:
            for rec in records:
                self._add(entry, rec)

    def remove(self, user_id: str, ids: Iterable[Any]) -> None:
        """Remove records of a user from the loaded index (absent ids are ignored)."""
        entry = self.peek(user_id)
        if entry is None:
            return
        for i in ids:
            entry.bm25.remove(i)
            entry.records.pop(i, None)
            for ordered in entry.pinned.values():
                ordered.discard(i)

    def advance(self, user_id: str, old: str, new: str) -> None:
        """Mark a user's snapshot as current at `new` if it was current at `old`.

        Called after a write whose records were applied in place: a snapshot that had
        already fallen behind stays behind, so its owner catches up from the store.
        """
        entry = self.peek(user_id)
        if entry is not None and entry.version == old:
            entry.version = new

    def drop(self, user_id: str | None = None) -> None:
        """Forget one user's index, or every index; the next `build` makes a new one."""
        with self._lock:
            if user_id is None:
                self._entries.clear()
            else:
                self._entries.pop(user_id, None)


# --- persisted snapshots --------------------------------------------------------------------------

SNAPSHOT_MAGIC = b"MALEXSNP"
SNAPSHOT_LAYOUT = 1
"""Bumped whenever the bytes `dump_snapshot` writes change meaning: older ones are rebuilt."""
_PREFIX = struct.Struct("<8sIII")  # magic, layout, header length, CRC-32 of all that follows


class SnapshotError(ValueError):
    """Bytes that are not a snapshot this code can read (corrupt, truncated, other layout)."""


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def dump_snapshot(
    entry: UserIndex, encode: Callable[[Any], bytes], *, tag: str = ""
) -> tuple[bytes, list[Any]]:
    """Serialize a user's snapshot: its records, BM25 postings, pinned records and version.

    No pickle: JSON for the ids, terms and header, and little-endian arrays, so reading a
    snapshot can never run code. Records are written as `encode` makes them (records of a
    loaded snapshot that were never decoded are copied as they are).

    Args:
        entry: The snapshot.
        encode: Turns one record into bytes (`load_snapshot`'s `decode` reads them back).
        tag: Written into the header; `load_snapshot` refuses bytes with another tag.

    Returns:
        The bytes, and the ids of the records in them.
    """
    with entry.bm25._lock:
        postings = entry.bm25.export()
        records = entry.records
        raw = records.raw if isinstance(records, LazyRecords) else None
        encoded: list[bytes | memoryview] = []
        kept: dict[Any, tuple[Any, tuple[Any, ...], bytes]] = {}
        for rid in postings.ids:
            found = raw(rid) if raw is not None else None
            if found is not None:
                encoded.append(found)
                continue
            rec = records[rid]
            # Its words too: a copy must never keep words a record changed in place.
            words = _words_of(rec)
            cached = entry.encoded.get(rid)
            same = cached is not None and cached[0] is rec and cached[1] == words
            done = cached[2] if cached is not None and same else encode(rec)
            kept[rid] = (rec, words, done)
            encoded.append(done)
        entry.encoded = kept
        doc_of = {rid: i for i, rid in enumerate(postings.ids)}
        pins = {
            group: [(key, doc_of[rid]) for key, rid in ordered.entries() if rid in doc_of]
            for group, ordered in entry.pinned.items()
        }
    r_off = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=r_off[1:])
    sections: list[tuple[str, bytes | memoryview, str]] = [
        ("ids", orjson.dumps(postings.ids), "bytes"),
        ("terms", orjson.dumps(postings.terms), "bytes"),
        ("lens", postings.lens.astype("<f8").tobytes(), "<f8"),
        ("t_off", postings.t_off.astype("<i8").tobytes(), "<i8"),
        ("p_doc", postings.p_doc.astype("<i4").tobytes(), "<i4"),
        ("p_freq", postings.p_freq.astype("<f4").tobytes(), "<f4"),
        ("r_off", r_off.astype("<i8").tobytes(), "<i8"),
        ("records", b"".join(encoded), "bytes"),
    ]
    for group, placed in pins.items():
        keys = np.asarray([k for k, _ in placed], dtype="<f8")
        docs = np.asarray([d for _, d in placed], dtype="<i4")
        sections += [(f"pin:{group}:key", keys.tobytes(), "<f8")]
        sections += [(f"pin:{group}:doc", docs.tobytes(), "<i4")]
    table: dict[str, list[Any]] = {}
    offset = 0
    for name, data, dtype in sections:
        table[name] = [offset, len(data), dtype]
        offset = _pad8(offset + len(data))
    header = orjson.dumps(
        {
            "version": entry.version,
            "tag": tag,
            "k1": entry.bm25.k1,
            "b": entry.bm25.b,
            "stemming": entry.bm25.stemming,
            "docs": len(postings.ids),
            "groups": sorted(pins),
            "sections": table,
        }
    )
    parts: list[bytes | memoryview] = [header, b"\0" * (_pad8(len(header)) - len(header))]
    for _name, data, _ in sections:
        parts += [data, b"\0" * (_pad8(len(data)) - len(data))]
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    prefix = _PREFIX.pack(SNAPSHOT_MAGIC, SNAPSHOT_LAYOUT, len(header), crc)
    return b"".join([prefix, *parts]), postings.ids


_words_of = operator.attrgetter(
    "content", "value", "subject", "status", "updated_at", "expires_at", "scope"
)
"""What of a record a persisted copy must follow (one C call: it runs for every record)."""


def snapshot_version(prefix: bytes) -> str | None:
    """Return the version a snapshot's first bytes name, or None if they name none.

    Reads the header only (callers pass the first few kilobytes): enough to tell whether
    loading the whole snapshot is worth it.
    """
    try:
        magic, layout, size, _ = _PREFIX.unpack_from(prefix)
        if magic != SNAPSHOT_MAGIC or layout != SNAPSHOT_LAYOUT:
            return None
        header = orjson.loads(prefix[_PREFIX.size : _PREFIX.size + size])
        return str(header["version"])
    except (struct.error, orjson.JSONDecodeError, KeyError, TypeError):
        return None


def load_snapshot(
    data: bytes,
    decode: Callable[[bytes], Any],
    *,
    tag: str = "",
) -> UserIndex:
    """Read back what `dump_snapshot` wrote; records are decoded on first access.

    Args:
        data: The bytes.
        decode: Turns one record's bytes into the record.
        tag: The tag the bytes must carry.

    Raises:
        SnapshotError: If the bytes are corrupt, truncated, of another layout or tag.
    """
    view = memoryview(data)
    try:
        magic, layout, size, crc = _PREFIX.unpack_from(view)
    except struct.error as exc:
        raise SnapshotError("too short to be a snapshot") from exc
    if magic != SNAPSHOT_MAGIC:
        raise SnapshotError("not a lexical snapshot")
    if layout != SNAPSHOT_LAYOUT:
        raise SnapshotError(f"layout {layout}, this code reads {SNAPSHOT_LAYOUT}")
    body = view[_PREFIX.size :]
    if zlib.crc32(body) != crc:
        raise SnapshotError("checksum mismatch: the snapshot is corrupt or truncated")
    try:
        header = orjson.loads(bytes(body[:size]))
        if header.get("tag") != tag:
            raise SnapshotError(f"tag {header.get('tag')!r}, expected {tag!r}")
        start = _pad8(size)
        table = header["sections"]

        def section(name: str) -> Any:
            offset, length, dtype = table[name]
            lo = start + int(offset)
            if lo < start or lo + int(length) > len(body):
                raise SnapshotError(f"section {name} lies outside the snapshot")
            chunk = body[lo : lo + int(length)]
            return chunk if dtype == "bytes" else np.frombuffer(chunk, dtype=dtype)

        ids = orjson.loads(section("ids"))
        terms = orjson.loads(section("terms"))
        n, v = len(ids), len(terms)
        t_off, p_doc, p_freq = section("t_off"), section("p_doc"), section("p_freq")
        r_off, blob, lens = section("r_off"), section("records"), section("lens")
        # Cheap structural checks: a well-formed checksum over nonsense must still not
        # send a search out of its arrays.
        ok = (
            len(t_off) == v + 1
            and len(r_off) == n + 1
            and len(lens) == n
            and int(t_off[0]) == 0
            and int(t_off[-1]) == len(p_doc) == len(p_freq)
            and int(r_off[0]) == 0
            and int(r_off[-1]) == len(blob)
            and bool(np.all(np.diff(t_off) >= 0) and np.all(np.diff(r_off) >= 0))
            and (len(p_doc) == 0 or (int(p_doc.min()) >= 0 and int(p_doc.max()) < n))
        )
        slots = dict(zip(ids, range(n), strict=True))
        if not ok or len(slots) != n:
            raise SnapshotError("inconsistent arrays")
        postings = Postings(ids, terms, lens, t_off, p_doc, p_freq)
        # k1 and b are read at query time, so a snapshot saved under other values is
        # scored with today's (the header keeps them for inspection only).
        bm25: BM25Index[Any] = BM25Index.from_export(
            postings,
            stemming=header["stemming"],
            slots=slots.copy(),
        )
        records = LazyRecords(ids, blob, r_off, decode, slots=slots)
        pinned: dict[str, OrderedRecords] = {}
        for group in header["groups"]:
            keys, docs = section(f"pin:{group}:key"), section(f"pin:{group}:doc")
            if len(keys) != len(docs) or (len(docs) and (docs.min() < 0 or docs.max() >= n)):
                raise SnapshotError(f"inconsistent pinned group {group}")
            if len(keys) > 1 and not bool(np.all(np.diff(keys) >= 0)):
                raise SnapshotError(f"pinned group {group} out of order")
            ordered = OrderedRecords(records)
            ordered.place(zip(keys.tolist(), [ids[d] for d in docs.tolist()], strict=True))
            pinned[str(group)] = ordered
        return UserIndex(bm25, records, pinned, str(header["version"]))
    except SnapshotError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise SnapshotError(f"unreadable snapshot: {exc}") from exc
