"""StreamFlow's database in the output folder, checked before a run: a run killed while
StreamFlow was making it (its first second or two) leaves a file without StreamFlow's tables,
and StreamFlow 0.2.0rc3 then fails every later run with "no such table: workflow", as it makes
the tables only for a new file. Such a file is put aside, and the run makes a new one."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing

DATABASE = os.path.join(".streamflow", "sqlite.db")  # in OUT, as streamflow.yml names it
#: The tables StreamFlow 0.2.0rc3 makes (streamflow/persistence/schemas/sqlite.sql).
TABLES = frozenset({"workflow", "step", "port", "dependency", "execution", "token",
                    "recoverable", "provenance", "deployment", "target", "filter"})


def repair_database(out_dir: str) -> str | None:
    """Put aside OUT's StreamFlow database if it is incomplete or damaged; say so (None: it
    is sound, or there is none yet)."""
    path = os.path.join(out_dir, DATABASE)
    if not os.path.isfile(path):
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as database:
            names = {row[0] for row in database.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            sound = names >= TABLES and database.execute(
                "PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError:
        sound = False
    if sound:
        return None
    aside = f"{path}.damaged"
    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.replace(path + suffix, aside + suffix)
    return (f"StreamFlow's database {path} was incomplete (a run stopped while it was being "
            f"made); it is kept as {aside}, and this run makes a new one")
