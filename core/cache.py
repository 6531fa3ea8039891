"""The one read cache of the project: rendered catalog pages and API results, keyed by the data they show.

A cached entry is stored under its URL and a *data fingerprint*: one query that reads, for every table
of the entry's scopes, the row count and the sums of two PostgreSQL system columns, `xmin` (the
transaction that wrote each row version) and `cmin` (the command within that transaction). Any insert,
update or delete gives the rows it touches a new `xmin`/`cmin` or changes a count, so the fingerprint
moves and the next read misses and recomputes. Why the database and not signals bumping a version in
Redis:

- every way of writing is seen: `save()`, `QuerySet.update`, `bulk_create`, raw SQL, `load_catalog`,
  the probe services, and any gunicorn or Celery process, with nothing to wire up or forget;
- the fingerprint is transactional: a writer's own reads see its change at once (including a test's
  uncommitted rows), nobody else sees it before the commit, and after a rollback (of a transaction or
  a savepoint) the fingerprint is the old one again or, when the undone write left a mark in a row
  header, a new one (a harmless miss); the rolled-back state's entries can never be found again;
- there is no per-process memory to go stale: every request asks, at the cost of one small query
  (a prepared statement, about 0.3 ms).

On SQLite (the default database of `make run`), which has no such system columns, triggers installed
after every `migrate` (`install_sqlite_version_triggers`) bump a per-table counter in
`atlas_table_version` on every insert, update and delete of a scoped table, and the fingerprint reads
those counters: the same guarantees, since SQLite's triggers run inside the writing transaction.

Entries still expire after `READ_CACHE_SECONDS` (default 300; 0 turns caching off): a safety net for a
sum that happens to come out equal, and a bound on the space that unreachable entries take. A cache
server that stops answering only costs speed: the read is computed as if nothing were cached.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.db.models import Model
from django.http import HttpRequest

logger = logging.getLogger(__name__)

ENTRY_KEY = "read:v3:{digest}"

# The tables whose rows a cached read may show. Runs and per-request measurements change constantly
# and feed no cached read (the runs list is never cached), so they are in no scope; the one run field a
# tool page shows (a summary's last-run region) is written when the run starts, before any summary
# points at the run.
SCOPE_MODELS: dict[str, Callable[[type[Model]], bool]] = {
    "catalog": lambda model: model._meta.app_label == "catalog",
    "probes": lambda model: model._meta.label_lower
    in ("probes.probetarget", "probes.measurementsummary", "probes.compatstatus"),
}


def read_cache_seconds() -> int:
    return settings.READ_CACHE_SECONDS


SQLITE_VERSION_TABLE = "atlas_table_version"


def scoped_tables(scopes: frozenset[str]) -> list[str]:
    """The tables whose rows the reads of `scopes` may show, sorted."""
    unknown = scopes - SCOPE_MODELS.keys()
    if unknown:
        raise ValueError(f"Unknown cache scopes: {sorted(unknown)}")
    # Auto-created models are the many-to-many link tables (Tool.sources, ...): links change too.
    return sorted(
        {
            model._meta.db_table
            for model in apps.get_models(include_auto_created=True)
            if any(SCOPE_MODELS[scope](model) for scope in scopes)
        }
    )


@functools.cache
def _fingerprint_sql(scopes: frozenset[str]) -> str:
    tables = scoped_tables(scopes)
    quote = connection.ops.quote_name
    return " UNION ALL ".join(
        f"SELECT {position}, COUNT(*), SUM(xmin::text::bigint), SUM(cmin::text::bigint) FROM {quote(table)}"
        for position, table in enumerate(tables)
    ) + " ORDER BY 1"


# Planning the fingerprint query (twenty-odd tables) costs about three times as much as running it, so
# each database connection prepares it once and then only EXECUTEs it. The PREPARE goes straight to
# the driver, outside Django's query log: it happens once per connection, not per request. Prepared
# statements outlive rollbacks and vanish with their connection, hence the weak per-connection record.
_prepared_on: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def _execute_statement(scopes: frozenset[str]) -> str:
    name = "atlas_fingerprint_" + "_".join(sorted(scopes))
    prepared = _prepared_on.setdefault(connection.connection, set())
    if name not in prepared:
        connection.connection.execute(f"PREPARE {name} AS {_fingerprint_sql(scopes)}")
        prepared.add(name)
    return f"EXECUTE {name}"


def install_sqlite_version_triggers(*, using_connection=None) -> None:
    """On SQLite, make every write to a scoped table bump that table's counter in atlas_table_version.

    Idempotent; run after every `migrate` (core's post_migrate handler), since a migration may add a
    table or rebuild one (SQLite rebuilds a table to alter it, dropping its triggers).
    """
    db = using_connection or connection
    if db.vendor != "sqlite":
        return
    quote = db.ops.quote_name
    existing = set(db.introspection.table_names())
    with db.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {SQLITE_VERSION_TABLE} "
            "(table_name TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        for table in scoped_tables(frozenset(SCOPE_MODELS)):
            if table not in existing:
                continue
            for operation in ("INSERT", "UPDATE", "DELETE"):
                cursor.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {quote(f'atlas_version_{table}_{operation.lower()}')} "
                    f"AFTER {operation} ON {quote(table)} BEGIN "
                    f"INSERT INTO {SQLITE_VERSION_TABLE} (table_name, version) VALUES ('{table}', 1) "
                    "ON CONFLICT (table_name) DO UPDATE SET version = version + 1; END"
                )


def _sqlite_fingerprint_rows(scopes: frozenset[str]) -> list[tuple[Any, ...]]:
    tables = scoped_tables(scopes)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT table_name, version FROM {SQLITE_VERSION_TABLE} "
            f"WHERE table_name IN ({', '.join(['%s'] * len(tables))}) ORDER BY table_name",
            tables,
        )
        return cursor.fetchall()


def data_fingerprint(scopes: Iterable[str]) -> str:
    """A short hash of the current state of every table in `scopes`, as this connection sees it (one query)."""
    if connection.vendor == "sqlite":
        rows = _sqlite_fingerprint_rows(frozenset(scopes))
    else:
        with connection.cursor() as cursor:
            cursor.execute(_execute_statement(frozenset(scopes)))
            rows = cursor.fetchall()
    return hashlib.blake2b(repr(rows).encode(), digest_size=16).hexdigest()


def _keep_everything(value: Any) -> bool:
    return True


def cached_read(
    *,
    request: HttpRequest,
    scopes: Iterable[str],
    build: Callable[[], Any],
    keep: Callable[[Any], bool] = _keep_everything,
    vary: Sequence[str] = (),
) -> tuple[Any, int]:
    """The result of `build()` for this URL (host, path and query) and the current data of `scopes`,
    and when it was computed (epoch seconds): the result cannot be older than that.

    `vary` adds what else the result depends on (for instance which probe targets this process has a key
    for), so processes that differ in it never share an entry.

    `build()` runs when nothing is cached; its result is stored only if `keep(result)` is true. The
    result must pickle. Only GET/HEAD reads that show nothing user-specific belong here.
    """
    timeout = read_cache_seconds()
    # The fingerprint reads PostgreSQL's system columns or SQLite's trigger-kept counters; on any other
    # database nothing is cached.
    if timeout <= 0 or connection.vendor not in ("postgresql", "sqlite"):
        return build(), int(time.time())
    scopes = tuple(sorted(set(scopes)))
    location = [request.scheme, request.get_host(), request.path, request.META.get("QUERY_STRING", "")]
    try:
        fingerprint = data_fingerprint(scopes)
    except DatabaseError:
        # A pooler may have dropped the prepared statement (DISCARD ALL), or a SQLite database was
        # migrated without core's triggers; prepare again next time and, like a cache outage, only
        # cost speed now.
        if connection.vendor == "postgresql":
            _prepared_on.pop(connection.connection, None)
        logger.warning("data fingerprint unavailable; computing %s", request.path, exc_info=True)
        return build(), int(time.time())
    raw = "\0".join([*location, *scopes, fingerprint, *vary])
    key = ENTRY_KEY.format(digest=hashlib.sha256(raw.encode()).hexdigest())
    try:
        entry = cache.get(key)
    except Exception:  # noqa: BLE001 - any cache backend failure degrades to computing the read
        logger.warning("read cache unavailable; computing %s", request.path, exc_info=True)
        return build(), int(time.time())
    if entry is not None:
        return entry
    entry = (build(), int(time.time()))
    if keep(entry[0]):
        try:
            cache.set(key, entry, timeout=timeout)
        except Exception:  # noqa: BLE001
            logger.warning("read cache unavailable; not storing %s", request.path, exc_info=True)
    return entry
