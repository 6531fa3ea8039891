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

Below the page cache sits a cache of *owned* pieces: a rendered catalog row, a serialized API row, a
tool's page or its comparison column, each kept under the fingerprint of the rows of its own tool
(`per_owner_read`), and pieces that show a known set of tools (a comparison's matrix, a model's page, a
dashboard), each kept under the fingerprints of exactly those tools (`per_group_read`). Every table of a scope is either owned by one tool (the tool's row, its prices,
caveats, links, probe targets, and the summaries and compat statuses of those targets) or shared (sources,
licences, hardware, models, ...). One query returns, per tool, the count and `xmin`/`cmin` sums over all of
its rows, and the same for every shared table; a piece's key holds its tool's figures and the shared ones,
so an edit to one tool re-renders that tool's pieces only, and an edit to a shared row all of them. On
SQLite the triggers also bump a per-tool counter in `atlas_owner_version`.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.db.models import Model
from django.http import HttpRequest

logger = logging.getLogger(__name__)

ENTRY_KEY = "read:v3:{digest}"
OWNED_KEY = "owned:v1:{digest}"

# The model whose rows own the pieces cached by per_owner_read (see _ownership).
OWNER_MODEL = "catalog.tool"

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


@dataclass(frozen=True)
class OwnedTable:
    """A table whose every row belongs to one owner: through its own `owner_column`, or through the row of
    `via_table` its `via_column` points at (a summary belongs to its probe target's tool)."""

    scope: str
    table: str
    owner_column: str
    via_table: str = ""
    via_column: str = ""


def _scope_of(model: type[Model]) -> str | None:
    return next((scope for scope, belongs in SCOPE_MODELS.items() if belongs(model)), None)


def _owner_foreign_key(model: type[Model], owner: type[Model]):
    keys = [field for field in model._meta.concrete_fields if field.many_to_one and field.related_model is owner]
    if len(keys) > 1 or (keys and keys[0].null):
        raise ImproperlyConfigured(f"{model._meta.label} must point at one {owner._meta.label}, never none")
    return keys[0] if keys else None


@functools.cache
def _ownership(scopes: frozenset[str]) -> tuple[tuple[OwnedTable, ...], tuple[str, ...]]:
    """The owned tables of `scopes` and the shared ones (sorted names)."""
    owner = apps.get_model(OWNER_MODEL)
    owned: list[OwnedTable] = []
    shared: list[str] = []
    for model in apps.get_models(include_auto_created=True):
        scope = _scope_of(model)
        if scope not in scopes:
            continue
        table = model._meta.db_table
        key = _owner_foreign_key(model, owner)
        parents = [
            field for field in model._meta.concrete_fields
            if field.many_to_one and not field.null and _owner_foreign_key(field.related_model, owner)
        ]
        if model is owner:
            owned.append(OwnedTable(scope, table, model._meta.pk.column))
        elif key is not None:
            owned.append(OwnedTable(scope, table, key.column))
        elif parents:
            parent = parents[0]
            owned.append(OwnedTable(scope, table, _owner_foreign_key(parent.related_model, owner).column,
                                    parent.related_model._meta.db_table, parent.column))
        else:
            shared.append(table)
    return tuple(sorted(owned, key=lambda item: item.table)), tuple(sorted(shared))


@functools.cache
def _owner_fingerprint_sql(scopes: frozenset[str], *, every_owner: bool) -> str:
    owned, shared = _ownership(scopes)
    quote = connection.ops.quote_name
    selects = []
    for item in owned:
        if item.via_table:
            source = (f"{quote(item.table)} t JOIN {quote(item.via_table)} v "
                      f"ON v.{quote('id')} = t.{quote(item.via_column)}")
            column = f"v.{quote(item.owner_column)}"
        else:
            source, column = f"{quote(item.table)} t", f"t.{quote(item.owner_column)}"
        where = "" if every_owner else f" WHERE {column} = ANY($1)"
        selects.append(f"SELECT {column} AS owner, t.xmin::text::bigint AS x, t.cmin::text::bigint AS c "
                       f"FROM {source}{where}")
    # Shared tables come back under negative "owners": every tool's id is positive.
    shared_selects = [
        f"SELECT {-1 - position}, COUNT(*), SUM(xmin::text::bigint), SUM(cmin::text::bigint) FROM {quote(table)}"
        for position, table in enumerate(shared)
    ]
    owned_sql = f"SELECT owner, COUNT(*), SUM(x), SUM(c) FROM ({' UNION ALL '.join(selects)}) owned GROUP BY owner"
    return " UNION ALL ".join([owned_sql, *shared_selects])


def _postgresql_owner_rows(scopes: frozenset[str], owners: Sequence[int] | None) -> list[tuple[Any, ...]]:
    every_owner = owners is None
    connection.ensure_connection()
    name = "atlas_owners_" + "_".join(sorted(scopes)) + ("_all" if every_owner else "")
    prepared = _prepared_on.setdefault(connection.connection, set())
    if name not in prepared:
        arguments = "" if every_owner else "(bigint[])"
        connection.connection.execute(
            f"PREPARE {name}{arguments} AS {_owner_fingerprint_sql(scopes, every_owner=every_owner)}"
        )
        prepared.add(name)
    with connection.cursor() as cursor:
        if every_owner:
            cursor.execute(f"EXECUTE {name}")
        else:
            cursor.execute(f"EXECUTE {name}(%s::bigint[])", [list(owners)])
        return cursor.fetchall()


SQLITE_OWNER_TABLE = "atlas_owner_version"
# Past this many owners, one scan of every owner's rows costs less than looking each one up.
EVERY_OWNER_FROM = 32


def _sqlite_owner_rows(scopes: frozenset[str], owners: Sequence[int] | None) -> list[tuple[Any, ...]]:
    _, shared = _ownership(scopes)
    scope_list = sorted(scopes)
    owner_filter = "" if owners is None else f" AND owner_id IN ({', '.join(['%s'] * len(owners))})"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT owner_id, scope, version FROM {SQLITE_OWNER_TABLE} "
            f"WHERE scope IN ({', '.join(['%s'] * len(scope_list))}){owner_filter} ORDER BY owner_id, scope",
            [*scope_list, *(owners or [])],
        )
        rows = cursor.fetchall()
        shared_rows = []
        if shared:
            cursor.execute(
                f"SELECT table_name, version FROM {SQLITE_VERSION_TABLE} "
                f"WHERE table_name IN ({', '.join(['%s'] * len(shared))}) ORDER BY table_name",
                list(shared),
            )
            shared_rows = cursor.fetchall()
    versions: dict[int, list[Any]] = {}
    for owner, scope, version in rows:
        versions.setdefault(owner, []).extend((scope, version))
    # An owner no write has touched since the triggers were installed has no counter yet: version 0.
    wanted = versions if owners is None else {owner: versions.get(owner, [0]) for owner in owners}
    return [(owner, *figures) for owner, figures in wanted.items()] + [(-1, *shared_rows)]


def owner_fingerprints(scopes: Iterable[str], owners: Sequence[int] | None = None) -> tuple[str, dict[int, str]]:
    """(fingerprint of the shared tables of `scopes`, {owner id: fingerprint of its rows}) in one query,
    for `owners` (every owner when None). An owner missing from the answer has no row (any more)."""
    scopes = frozenset(scopes)
    if owners is not None and not owners:
        owners = [0]  # still one round trip for the shared tables; no tool has id 0
    if connection.vendor == "sqlite":
        rows = _sqlite_owner_rows(scopes, owners)
    else:
        rows = _postgresql_owner_rows(scopes, owners)
    shared = sorted((row for row in rows if row[0] < 0), key=lambda row: row[0])
    per_owner = {row[0]: ":".join(map(str, row[1:])) for row in rows if row[0] > 0}
    return hashlib.blake2b(repr(shared).encode(), digest_size=16).hexdigest(), per_owner


@dataclass(frozen=True)
class Fingerprints:
    """What owner_fingerprints answered for `scopes`: the shared tables' fingerprint and each owner's
    (every owner's when `owners` was None)."""

    scopes: tuple[str, ...]
    shared: str
    owners: dict[int, str]


def read_fingerprints(scopes: Iterable[str], owners: Sequence[int] | None = None) -> Fingerprints | None:
    """The fingerprints of `scopes` (one query), to share between several reads of one request; None when
    nothing is cached (caching off, another database, or the query failed)."""
    scopes = tuple(sorted(set(scopes)))
    if read_cache_seconds() <= 0 or connection.vendor not in ("postgresql", "sqlite"):
        return None
    try:
        shared, per_owner = owner_fingerprints(scopes, owners)
    except DatabaseError:
        if connection.vendor == "postgresql":
            _prepared_on.pop(connection.connection, None)
        logger.warning("owner fingerprints unavailable; computing %s", scopes, exc_info=True)
        return None
    return Fingerprints(scopes, shared, per_owner)


def _piece_key(kind: str, parts: Sequence[str], fingerprints: Fingerprints, vary: Sequence[str]) -> str:
    raw = "\0".join([kind, *parts, fingerprints.shared, *fingerprints.scopes, *vary])
    return OWNED_KEY.format(digest=hashlib.sha256(raw.encode()).hexdigest())


def shared_read(
    *, kind: str, fingerprints: Fingerprints | None, key: Sequence[str], build: Callable[[], Any]
) -> Any:
    """A piece that shows shared rows only (no owner's), for the values in `key`, cached under the shared
    tables' fingerprint of `fingerprints` (from read_fingerprints; None computes it)."""
    if fingerprints is None:
        return build()
    cache_key = _piece_key(kind, ["shared", *key], fingerprints, ())
    try:
        piece = cache.get(cache_key)
    except Exception:  # noqa: BLE001 - any cache backend failure degrades to computing the piece
        logger.warning("read cache unavailable; computing %s", kind, exc_info=True)
        return build()
    if piece is None:
        piece = build()
        try:
            cache.set(cache_key, piece, timeout=read_cache_seconds())
        except Exception:  # noqa: BLE001
            logger.warning("read cache unavailable; not storing %s", kind, exc_info=True)
    return piece


def per_group_read(
    *,
    kind: str,
    scopes: Iterable[str],
    groups: Mapping[Any, Sequence[int]],
    build: Callable[[list[Any]], Mapping[Any, Any]],
    vary: Sequence[str] = (),
    fingerprints: Fingerprints | None = None,
) -> dict[Any, Any]:
    """{group: piece} for `groups` (a key: the owners whose rows the piece shows), each piece cached under
    the rows of its owners and the shared rows of `scopes`.

    `build(missing)` returns the pieces of the groups not cached (it may leave out a group whose rows are
    gone). `kind` names the piece; `vary` adds what else it depends on (a host for absolute URLs, ...). A
    piece shows nothing of owners outside its group and nothing that depends on other groups.
    `fingerprints` (from read_fingerprints for the same scopes, covering these owners) saves the query.
    """
    groups = {group: sorted(set(owners)) for group, owners in groups.items()}
    if not groups:
        return {}
    if fingerprints is None:
        wanted = sorted({owner for owners in groups.values() for owner in owners})
        fingerprints = read_fingerprints(scopes, None if len(wanted) > EVERY_OWNER_FROM else wanted)
    elif fingerprints.scopes != tuple(sorted(set(scopes))):
        raise ValueError(f"fingerprints of {fingerprints.scopes} cannot key pieces of {sorted(set(scopes))}")
    if fingerprints is None:
        return dict(build(list(groups)))
    timeout = read_cache_seconds()
    keys = {}
    for group, owners in groups.items():
        # A piece of an owner that has no row any more is computed, never stored.
        if all(owner in fingerprints.owners for owner in owners):
            figures = [f"{owner}={fingerprints.owners[owner]}" for owner in owners]
            keys[group] = _piece_key(kind, [repr(group), *figures], fingerprints, vary)
    try:
        found = cache.get_many(list(keys.values()))
    except Exception:  # noqa: BLE001 - any cache backend failure degrades to computing the pieces
        logger.warning("read cache unavailable; computing %s", kind, exc_info=True)
        return dict(build(list(groups)))
    pieces = {group: found[key] for group, key in keys.items() if key in found}
    missing = [group for group in groups if group not in pieces]
    if missing:
        built = dict(build(missing))
        pieces.update(built)
        try:
            cache.set_many({keys[group]: piece for group, piece in built.items() if group in keys}, timeout=timeout)
        except Exception:  # noqa: BLE001
            logger.warning("read cache unavailable; not storing %s", kind, exc_info=True)
    return {group: pieces[group] for group in groups if group in pieces}


def per_owner_read(
    *,
    kind: str,
    scopes: Iterable[str],
    owners: Sequence[int],
    build: Callable[[list[int]], Mapping[int, Any]],
    vary: Sequence[str] = (),
    fingerprints: Fingerprints | None = None,
) -> dict[int, Any]:
    """{owner: piece} for `owners`, each piece showing the rows of its owner alone (and shared rows):
    per_group_read with one group per owner."""
    return per_group_read(kind=kind, scopes=scopes, groups={owner: [owner] for owner in owners}, build=build,
                          vary=vary, fingerprints=fingerprints)


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
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {SQLITE_OWNER_TABLE} "
            "(scope TEXT NOT NULL, owner_id INTEGER NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (scope, owner_id))"
        )
        owned, _ = _ownership(frozenset(SCOPE_MODELS))
        for item in owned:
            if item.table not in existing:
                continue
            for operation, rows in (("INSERT", ("NEW",)), ("UPDATE", ("OLD", "NEW")), ("DELETE", ("OLD",))):
                owners = " UNION ".join(
                    f"SELECT (SELECT {quote(item.owner_column)} FROM {quote(item.via_table)} "
                    f"WHERE id = {row}.{quote(item.via_column)}) AS owner"
                    if item.via_table else f"SELECT {row}.{quote(item.owner_column)} AS owner"
                    for row in rows
                )
                cursor.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {quote(f'atlas_owner_{item.table}_{operation.lower()}')} "
                    f"AFTER {operation} ON {quote(item.table)} BEGIN "
                    f"INSERT INTO {SQLITE_OWNER_TABLE} (scope, owner_id, version) "
                    f"SELECT '{item.scope}', owner, 1 FROM ({owners}) WHERE owner IS NOT NULL "
                    "ON CONFLICT (scope, owner_id) DO UPDATE SET version = version + 1; END"
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
