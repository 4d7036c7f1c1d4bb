"""Storage faults told as one line: a full disk, a read-only home, a damaged file.

The CLI prints what `storage_fault` says as `error: ...` and exits 2 instead of showing a
traceback. Only faults of the disk and the databases are recognised; anything else (a bug)
still propagates as it is.
"""

from __future__ import annotations

import errno
import os
import sqlite3

from graphs.model_errors import raised_in
from memory import BackendConfig

DISK_ERRNOS = {
    errno.ENOSPC: "the disk is full: free some space and try again",
    errno.EDQUOT: "the disk quota is used up: free some space and try again",
    errno.EFBIG: "a file grew past the size this system allows",
    errno.EROFS: "the memory home is on a read-only file system",
    errno.EACCES: "permission denied: the memory home must be writable by this user",
    errno.EPERM: "permission denied: the memory home must be writable by this user",
    errno.EIO: "the disk reported an I/O error",
}

DATABASE_FILES = ("store.sqlite", "checkpoints.sqlite", os.path.join("chroma", "chroma.sqlite3"))
"""The SQLite files of the embedded default, relative to the memory home."""


DAMAGE_WORDS = ("not a database", "malformed", "corrupt")
"""What SQLite says of a file that is damaged (not of one it merely cannot write)."""


def damaged_files(config: BackendConfig) -> list[str]:
    """Return the SQLite files under the memory home that SQLite cannot read.

    Each file is opened read-only and its schema read; nothing is written.
    """
    if config.database_url:
        candidates = []
    else:
        candidates = [os.path.join(config.home, name) for name in DATABASE_FILES[:2]]
    if not config.chroma_host:
        candidates.append(os.path.join(config.resolved_chroma_path(), "chroma.sqlite3"))
    bad = []
    for path in candidates:
        if not os.path.isfile(path):
            continue
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            # Only damage: a read-only disk or a lock is no fault of the file.
            if any(word in str(exc).lower() for word in DAMAGE_WORDS):
                bad.append(path)
    return bad


def _disk_state(home: str) -> str | None:
    """Say what is wrong with the file system of the home (read-only, full), if anything.

    Asked of the file system itself: a library's error after such a fault does not always
    say it (Chroma, opened again in one process after a failed open, fails on its own
    half-built state instead).
    """
    path = os.path.abspath(home)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        fs = os.statvfs(path)
    except OSError:
        return None
    if fs.f_flag & os.ST_RDONLY:
        return f"the memory home {home} is on a read-only file system; make it writable"
    if fs.f_bavail == 0 and fs.f_blocks:
        return DISK_ERRNOS[errno.ENOSPC]
    return None


def storage_fault(exc: BaseException, config: BackendConfig) -> str | None:
    """Return a one-line account of a storage fault, or None if `exc` is not one.

    Args:
        exc: What a command raised.
        config: Where memory lives (to name the damaged file).

    """
    if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{DISK_ERRNOS[exc.errno]}{where}"
    text = str(exc)
    chroma = type(exc).__module__.startswith("chromadb") or raised_in(exc, ("chromadb",))
    if not isinstance(exc, sqlite3.DatabaseError) and not chroma:
        return None
    lowered = text.lower()
    disk = _disk_state(config.home)
    if disk:
        return f"{disk} (under {config.home}: {text})"
    bad = damaged_files(config)
    if bad:
        named = ", ".join(bad)
        index_only = all(p.endswith("chroma.sqlite3") for p in bad)
        hint = (
            "the memories themselves are in the store: move the Chroma directory away and "
            "run `memory-agent reindex` to rebuild it"
            if index_only
            else "restore it from a backup or move it away (`memory-agent memories export` "
            "still reads an intact store)"
        )
        return f"{named} is damaged ({text}); {hint}"
    if "disk is full" in lowered or "disk full" in lowered:
        return f"{DISK_ERRNOS[errno.ENOSPC]} (under {config.home}: {text})"
    if "readonly" in lowered or "read-only" in lowered:
        return f"the memory home {config.home} is read-only ({text}); make it writable"
    if "unable to open" in lowered:
        return f"cannot open the databases under {config.home} ({text}); check that it exists"
    if any(word in lowered for word in DAMAGE_WORDS):
        return f"a database file under {config.home} is damaged ({text})"
    if chroma:
        return f"the Chroma index cannot be used ({text}); `memory-agent reindex` rebuilds it"
    return f"the database under {config.home} failed ({text})"
