"""The one read cache of the project: rendered catalog pages and API results, keyed by the data they show.

A cached entry is stored under its URL and a *data fingerprint*: for every table of the entry's scopes,
the sums kept by the write log (core.write_log), which triggers on those tables extend, inside the writing
transaction, on every insert, update, delete or truncate. Any write moves the fingerprint, so the next read
misses and recomputes. Why the database and not signals bumping a version in Redis:

- every way of writing is seen: `save()`, `QuerySet.update`, `bulk_create`, raw SQL, `load_catalog`,
  the probe services, and any gunicorn or Celery process, with nothing to wire up or forget;
- the fingerprint is transactional: a writer's own reads see its change at once (including a test's
  uncommitted rows), nobody else sees it before the commit, and after a rollback (of a transaction or
  a savepoint) the fingerprint is the old one again; a rolled-back state never comes back, since
  transaction ids only grow, so its entries can never be found again;
- there is no per-process memory to go stale: every request asks, at the cost of one small query on a
  few rows of the log, whatever the size of the catalog.

Below the page cache sits a cache of *owned* pieces: a rendered catalog row, a serialized API row, a
tool's page or its comparison column, each kept under the fingerprint of the rows of its own tool
(`per_owner_read`), and pieces that show a known set of tools (a comparison's matrix, a model's page, a
dashboard), each kept under the fingerprints of exactly those tools (`per_group_read`). Every table of a
scope is either owned by one tool (the tool's row, its prices, caveats, links, probe targets, and the
summaries and compat statuses of those targets) or shared (sources, licences, hardware, models, ...); the
write log keeps, besides each table's sums, each tool's. A piece's key holds its tool's figures and the
shared tables' ones, so an edit to one tool re-renders that tool's pieces only, and an edit to a shared row
all of them.

Entries still expire after `READ_CACHE_SECONDS` (default 300; 0 turns caching off): a bound on the space
that unreachable entries take. A cache server that stops answering only costs speed: the read is computed
as if nothing were cached.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest
from django.utils.safestring import SafeString

from core.write_log import EVERY_TABLE, OWNER_LOG, TABLE_LOG, ownership, scoped_tables

logger = logging.getLogger(__name__)

ENTRY_KEY = "read:v5:{digest}"
OWNED_KEY = "owned:v3:{digest}"


def read_cache_seconds() -> int:
    return settings.READ_CACHE_SECONDS


# The code that builds entries: the Python packages and templates of the project.
CODE_SUFFIXES = (".py", ".html", ".txt", ".csv")


@functools.cache
def code_version() -> str:
    """A hash of the project's code and templates, part of every key: an entry (a pickled piece whose class
    may have changed, a page from an older template) is only read by the code that built it, so processes
    of two releases sharing one Redis during a deploy never read each other's entries."""
    digest = hashlib.blake2b(digest_size=16)
    root = Path(settings.BASE_DIR)
    packages = [path for path in root.iterdir() if (path / "__init__.py").exists() or path.name == "templates"]
    for path in sorted(file for package in packages for file in package.rglob("*") if file.suffix in CODE_SUFFIXES):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _immutable(entry: Any) -> bool:
    """Whether no reader can change `entry`: strings (rendered HTML included), bytes and numbers, and tuples
    of them."""
    if type(entry) is tuple:
        return all(_immutable(item) for item in entry)
    return type(entry) in (str, SafeString, bytes, int, float, bool, type(None))


class LocalCopies:
    """This process's copies of the read cache's entries, in front of Django's cache (Redis when configured),
    so that an entry this process has seen costs no round trip.

    An entry's key is made of the data it was built from (the fingerprints), so a copy can never be stale;
    a copy is dropped for space (least recently used first, within `READ_CACHE_LOCAL_BYTES`, counting the
    pickled size) or once its entry is as old as an entry may be (`READ_CACHE_SECONDS` after it was built,
    wherever it was built). An entry no reader can change (a rendered page or row: strings, bytes, tuples
    of them) is kept as it is; any other is kept pickled, so every read gets objects of its own.
    """

    def __init__(self) -> None:
        # key: (the entry or its pickle, whether it is pickled, when it was built, its pickled size)
        self._copies: OrderedDict[str, tuple[Any, bool, float, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_many(self, keys: Iterable[str], *, built_after: float) -> dict[str, tuple[Any, float]]:
        """{key: (entry, when it was built)} of the copies of `keys` built after `built_after`."""
        found = {}
        with self._lock:
            for key in keys:
                copy = self._copies.get(key)
                if copy is None:
                    continue
                if copy[2] <= built_after:
                    self._drop(key)
                    continue
                self._copies.move_to_end(key)
                found[key] = copy
        return {key: (pickle.loads(kept)[1] if pickled else kept, built)
                for key, (kept, pickled, built, _) in found.items()}

    def put(self, key: str, blob: bytes, entry: Any, built: float) -> None:
        """Keep `entry`, built at `built`, whose pickle (of (built, entry)) is `blob`."""
        budget = settings.READ_CACHE_LOCAL_BYTES
        if len(blob) > budget:
            return
        copy = (entry, False, built, len(blob)) if _immutable(entry) else (blob, True, built, len(blob))
        with self._lock:
            self._drop(key)
            self._copies[key] = copy
            self._bytes += len(blob)
            while self._bytes > budget:
                self._drop(next(iter(self._copies)))

    def _drop(self, key: str) -> None:
        copy = self._copies.pop(key, None)
        if copy is not None:
            self._bytes -= copy[3]

    def clear(self) -> None:
        with self._lock:
            self._copies.clear()
            self._bytes = 0


local_copies = LocalCopies()


def read_cache_clear() -> None:
    """Empty the read cache: Django's cache (shared by every process) and this process's copies."""
    cache.clear()
    local_copies.clear()


def _fetch(keys: Sequence[str]) -> dict[str, tuple[Any, float]]:
    """{key: (entry, when it was built)} for the keys of `keys` cached and younger than READ_CACHE_SECONDS,
    from this process's copies or else from the cache (one round trip). A cache failure raises."""
    built_after = time.time() - read_cache_seconds()
    found = local_copies.get_many(keys, built_after=built_after)
    wanted = [key for key in keys if key not in found]
    if wanted:
        for key, blob in cache.get_many(wanted).items():
            built, entry = pickle.loads(blob)
            if built > built_after:
                local_copies.put(key, blob, entry, built)
                found[key] = (entry, built)
    return found


def _store(entries: Mapping[str, Any], *, built: float | None = None) -> None:
    """Cache `entries` ({key: entry}, built now or at `built`) here and in the cache. A cache failure raises,
    after the copies of this process are kept."""
    built = time.time() if built is None else built
    blobs = {key: pickle.dumps((built, entry), pickle.HIGHEST_PROTOCOL) for key, entry in entries.items()}
    for key, blob in blobs.items():
        local_copies.put(key, blob, entries[key], built)
    # Django's Redis set_many sends a SET and an EXPIRE per key; one key takes a single SET.
    if len(blobs) == 1:
        cache.set(*next(iter(blobs.items())), timeout=read_cache_seconds())
    else:
        cache.set_many(blobs, timeout=read_cache_seconds())


# Past this many owners, reading every owner's log rows costs less than looking each one up.
EVERY_OWNER_FROM = 32


def _in(values) -> str:
    return ", ".join(["%s"] * len(values))


def _table_sums(tables: Sequence[str]) -> str:
    return (f"SELECT -1, table_name, SUM(transactions), SUM(txid_sum), SUM(writes) FROM {TABLE_LOG} "
            f"WHERE table_name IN ({_in(tables)}) GROUP BY table_name")


def owner_fingerprints(scopes: Iterable[str], owners: Sequence[int] | None = None) -> tuple[str, dict[int, str]]:
    """(fingerprint of the shared tables of `scopes`, {owner id: fingerprint of its rows}) in one query,
    for `owners` (every owner when None). An owner missing from the answer has never had a row; one whose
    rows were deleted is still there, under the fingerprint of the deletion."""
    scopes = frozenset(scopes)
    _, shared_tables = ownership(scopes)
    scope_list = sorted(scopes)
    # No tool has id 0: an empty list still asks for the shared tables in the same round trip.
    asked = [] if owners is None else list(owners) or [0]
    owner_filter = "" if owners is None else f" AND owner_id IN ({_in(asked)})"
    with connection.cursor() as cursor:
        cursor.execute(
            # An owner's sums over all the scopes asked for move with any write to any of them: one row each.
            f"SELECT owner_id, '', SUM(transactions), SUM(txid_sum), SUM(writes) FROM {OWNER_LOG} "
            f"WHERE scope IN ({_in(scope_list)}){owner_filter} GROUP BY owner_id "
            f"UNION ALL {_table_sums([*shared_tables, EVERY_TABLE])} ORDER BY 1, 2",
            [*scope_list, *asked, *shared_tables, EVERY_TABLE],
        )
        rows = cursor.fetchall()
    shared = [row[1:] for row in rows if row[0] < 0]
    fingerprints = {owner: f"{transactions}:{txid_sum}:{writes}"
                    for owner, _, transactions, txid_sum, writes in rows if owner >= 0}
    return hashlib.blake2b(repr(shared).encode(), digest_size=16).hexdigest(), fingerprints


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
        logger.warning("owner fingerprints unavailable; computing %s", scopes, exc_info=True)
        return None
    return Fingerprints(scopes, shared, per_owner)


def shared_read(
    *, kind: str, fingerprints: Fingerprints | None, key: Sequence[str], build: Callable[[], Any]
) -> Any:
    """A piece that shows shared rows only (no owner's), for the values in `key`, cached under the shared
    tables' fingerprint of `fingerprints` (from read_fingerprints); computed when there are none."""
    if fingerprints is None:
        return build()
    group = ("shared", *key)
    return per_group_read(kind=kind, scopes=fingerprints.scopes, groups={group: []},
                          build=lambda groups: {group: build()}, fingerprints=fingerprints)[group]


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
    groups = {group: owners if len(owners) == 1 else sorted(set(owners)) for group, owners in groups.items()}
    if not groups:
        return {}
    if fingerprints is None:
        wanted = sorted({owner for owners in groups.values() for owner in owners})
        fingerprints = read_fingerprints(scopes, None if len(wanted) > EVERY_OWNER_FROM else wanted)
    elif fingerprints.scopes != tuple(sorted(set(scopes))):
        raise ValueError(f"fingerprints of {fingerprints.scopes} cannot key pieces of {sorted(set(scopes))}")
    if fingerprints is None:
        return dict(build(list(groups)))
    keys = {}
    # A page may ask for hundreds of pieces: what their keys share is joined once.
    head = "\0".join([code_version(), kind])
    tail = "\0".join([fingerprints.shared, *fingerprints.scopes, *vary])
    prints = fingerprints.owners
    for group, owners in groups.items():
        # A piece of an owner that has never had a row (none yet) is computed, never stored.
        if all(owner in prints for owner in owners):
            figures = "\0".join(f"{owner}={prints[owner]}" for owner in owners)
            raw = f"{head}\0{group!r}\0{figures}\0{tail}"
            keys[group] = OWNED_KEY.format(digest=hashlib.sha256(raw.encode()).hexdigest())
    try:
        found = _fetch(list(keys.values()))
    except Exception:  # noqa: BLE001 - any cache backend failure degrades to computing the pieces
        logger.warning("read cache unavailable; computing %s", kind, exc_info=True)
        return dict(build(list(groups)))
    pieces = {group: found[key][0] for group, key in keys.items() if key in found}
    missing = [group for group in groups if group not in pieces]
    if missing:
        built = dict(build(missing))
        pieces.update(built)
        try:
            _store({keys[group]: piece for group, piece in built.items() if group in keys})
        except Exception:  # noqa: BLE001
            logger.warning("read cache unavailable; not storing %s", kind, exc_info=True)
    return {group: pieces[group] for group in groups if group in pieces}


def filters_key(filters: Mapping[str, Any]) -> str:
    """`filters` ({name: value}) as a piece's `vary`: by name, model instances by their primary key."""
    return repr(sorted((name, getattr(value, "pk", value)) for name, value in filters.items()))


def every_owner_read(*, kind: str, fingerprints: Fingerprints | None, build: Callable[[], Any],
                     vary: Sequence[str] = ()) -> Any:
    """A piece that depends on every owner's rows (who the tools are, in which order), cached under all of
    them: `fingerprints` must be read_fingerprints for every owner. Computed when there are none."""
    if fingerprints is None:
        return build()
    every_owner = "every owner"
    return per_group_read(
        kind=kind, scopes=fingerprints.scopes, groups={every_owner: sorted(fingerprints.owners)},
        build=lambda groups: {every_owner: build()}, vary=vary, fingerprints=fingerprints,
    )[every_owner]


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


def data_fingerprint(scopes: Iterable[str]) -> str:
    """A short hash of the current state of every table in `scopes`, as this connection sees it (one query)."""
    tables = [*scoped_tables(frozenset(scopes)), EVERY_TABLE]
    with connection.cursor() as cursor:
        cursor.execute(f"{_table_sums(tables)} ORDER BY 2", tables)
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
    # The write log's triggers are written for PostgreSQL and SQLite; on any other database nothing is cached.
    if timeout <= 0 or connection.vendor not in ("postgresql", "sqlite"):
        return build(), int(time.time())
    scopes = tuple(sorted(set(scopes)))
    location = [request.scheme, request.get_host(), request.path, request.META.get("QUERY_STRING", "")]
    try:
        fingerprint = data_fingerprint(scopes)
    except DatabaseError:
        # A database migrated without core's write log: like a cache outage, this only costs speed.
        logger.warning("data fingerprint unavailable; computing %s", request.path, exc_info=True)
        return build(), int(time.time())
    raw = "\0".join([code_version(), *location, *scopes, fingerprint, *vary])
    key = ENTRY_KEY.format(digest=hashlib.sha256(raw.encode()).hexdigest())
    try:
        found = _fetch([key])
    except Exception:  # noqa: BLE001 - any cache backend failure degrades to computing the read
        logger.warning("read cache unavailable; computing %s", request.path, exc_info=True)
        return build(), int(time.time())
    if key in found:
        result, built = found[key]
        return result, int(built)
    built = int(time.time())
    result = build()
    if keep(result):
        try:
            _store({key: result}, built=built)
        except Exception:  # noqa: BLE001
            logger.warning("read cache unavailable; not storing %s", request.path, exc_info=True)
    return result, built
