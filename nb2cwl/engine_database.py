"""StreamFlow's database in the output folder, looked after before a run.

- A run killed while StreamFlow was making it (its first second or two) leaves a file without
  StreamFlow's tables, and StreamFlow 0.2.0rc3 then fails every later run with "no such table:
  workflow", as it makes the tables only for a new file. Such a file is put aside, and the run
  makes a new one.
- StreamFlow adds every run's records (its steps, ports, tokens, provenance: about half a
  megabyte for a ten-step notebook) and never removes any, so the file grew without bound
  over hundreds of runs. Only the last completed run's records are read again (`nb2cwl export
  --with-run`, through `streamflow prov`); the others are removed before each run.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing

DATABASE = os.path.join(".streamflow", "sqlite.db")  # in OUT, as streamflow.yml names it
#: The tables StreamFlow 0.2.0rc3 makes (streamflow/persistence/schemas/sqlite.sql).
COMPLETED = 4  # StreamFlow's Status.COMPLETED, as the workflow table keeps it
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


def prune_database(out_dir: str) -> int:
    """Remove from OUT's StreamFlow database every run but the last completed one (the one
    `nb2cwl export --with-run` reads); the number removed."""
    path = os.path.join(out_dir, DATABASE)
    if not os.path.isfile(path):
        return 0
    try:
        with closing(sqlite3.connect(path, timeout=30)) as database:
            kept = database.execute("SELECT MAX(id) FROM workflow WHERE status = ?",
                                    (COMPLETED,)).fetchone()[0]
            old = database.execute("SELECT COUNT(*) FROM workflow WHERE id IS NOT ?",
                                   (kept,)).fetchone()[0]
            if not old:
                return 0
            with database:  # one transaction: all of it or nothing
                database.execute("CREATE TEMP TABLE gone_port AS SELECT id FROM port "
                                 "WHERE workflow IS NOT ?", (kept,))
                database.execute("CREATE TEMP TABLE gone_step AS SELECT id FROM step "
                                 "WHERE workflow IS NOT ?", (kept,))
                database.execute("CREATE TEMP TABLE gone_token AS SELECT id FROM token "
                                 "WHERE port IN (SELECT id FROM gone_port)")
                for statement in (
                        "DELETE FROM provenance WHERE dependee IN (SELECT id FROM gone_token) "
                        "OR depender IN (SELECT id FROM gone_token)",
                        "DELETE FROM recoverable WHERE id IN (SELECT id FROM gone_token)",
                        "DELETE FROM token WHERE id IN (SELECT id FROM gone_token)",
                        "DELETE FROM execution WHERE step IN (SELECT id FROM gone_step)",
                        "DELETE FROM dependency WHERE step IN (SELECT id FROM gone_step) "
                        "OR port IN (SELECT id FROM gone_port)",
                        "DELETE FROM port WHERE id IN (SELECT id FROM gone_port)",
                        # tokens of no port (files a step staged), linked to nothing left
                        "DELETE FROM token WHERE port IS NULL AND id NOT IN (SELECT dependee "
                        "FROM provenance) AND id NOT IN (SELECT depender FROM provenance)",
                        "DELETE FROM recoverable WHERE id NOT IN (SELECT id FROM token)",
                        "DELETE FROM step WHERE id IN (SELECT id FROM gone_step)"):
                    database.execute(statement)
                database.execute("DELETE FROM workflow WHERE id IS NOT ?", (kept,))
                # the targets (and their deployments) a run's steps were bound to: those the
                # kept run's steps and ports name stay
                targets, deployments = _referenced(database)
                database.execute(f"DELETE FROM target WHERE id NOT IN ({_ids(targets)})")
                database.execute("DELETE FROM deployment WHERE id NOT IN (SELECT deployment "
                                 f"FROM target) AND id NOT IN ({_ids(deployments)})")
            database.execute("VACUUM")  # give the space back
            return int(old)
    except sqlite3.DatabaseError:
        return 0  # StreamFlow says what is wrong with it, if anything


def _referenced(database: sqlite3.Connection) -> tuple[set[int], set[int]]:
    """The target and deployment ids the steps' and ports' parameters name."""
    targets: set[int] = set()
    deployments: set[int] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                found = targets if key in ("target", "targets") else \
                    deployments if key in ("deployment", "deployments", "deployment_config") \
                    else None
                if found is not None:
                    for one in item if isinstance(item, list) else [item]:
                        if isinstance(one, int):
                            found.add(one)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for table in ("step", "port"):
        for (params,) in database.execute(f"SELECT params FROM {table}"):
            try:
                walk(json.loads(params or "null"))
            except ValueError:
                continue
    return targets, deployments


def _ids(ids: set[int]) -> str:
    return ",".join(str(i) for i in sorted(ids)) or "-1"  # (NOT IN (NULL) keeps every row)
