"""Which tables the read cache watches, who owns their rows, and the triggers that log every write to them.

The read cache (core.cache) keys what it stores by the state of the rows shown. Rather than reading those
rows (every row of the catalog, on every request), it reads the write log: database triggers on every
scoped table add, within the writing transaction, a row per (table, transaction) to `atlas_table_write`
and a row per (scope, tool, transaction) to `atlas_owner_write` (core.models.TableWrite, OwnerWrite), and
count the statements on it. The guarantees are those of the writes themselves:

- every way of writing is seen: `save()`, `QuerySet.update`, `bulk_create`, raw SQL, `load_catalog`, the
  probe services, from any gunicorn or Celery process; a TRUNCATE logs a write to every table ("*");
- a writer's own reads see its log rows at once (including a test's uncommitted rows), nobody else sees
  them before the commit, and a rollback (of a transaction or a savepoint) takes them back with the rows;
- writers never wait for each other: each transaction only inserts rows keyed by its own id (on SQLite,
  which lets one writer in at a time, one row per table and per tool is bumped instead).

Transaction ids only grow (on SQLite each write sets a new random mark), so a state that was rolled back
is never seen again: its cached entries can never be found. Installing the triggers (after every `migrate`) logs a write to every table and every tool,
so no state from before a migration can be mistaken for one after it. On PostgreSQL the log grows by a row
per write transaction; `write_log_compact` (every ten minutes from Celery beat) folds the rows of committed
transactions into one per table and per tool, keeping the sums a fingerprint is made of.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import connection as default_connection
from django.db import transaction
from django.db.models import Model

# The model whose rows own the pieces cached by core.cache.per_owner_read (see ownership).
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

TABLE_LOG = "atlas_table_write"
OWNER_LOG = "atlas_owner_write"
# The table name under which a write to every table is logged.
EVERY_TABLE = "*"


@functools.cache
def scoped_tables(scopes: frozenset[str]) -> tuple[str, ...]:
    """The tables whose rows the reads of `scopes` may show, sorted."""
    unknown = scopes - SCOPE_MODELS.keys()
    if unknown:
        raise ValueError(f"Unknown cache scopes: {sorted(unknown)}")
    # Auto-created models are the many-to-many link tables (Tool.sources, ...): links change too.
    return tuple(sorted(
        {
            model._meta.db_table
            for model in apps.get_models(include_auto_created=True)
            if any(SCOPE_MODELS[scope](model) for scope in scopes)
        }
    ))


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
def ownership(scopes: frozenset[str]) -> tuple[tuple[OwnedTable, ...], tuple[str, ...]]:
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


def _owners_of(item: OwnedTable, rows: str, quote: Callable[[str], str]) -> str:
    """SQL for the distinct owners of the rows `rows` (a transition table, or NEW / OLD on SQLite) of `item`."""
    if item.via_table:
        return (f"SELECT v.{quote(item.owner_column)} AS owner FROM {rows} t JOIN {quote(item.via_table)} v "
                f"ON v.{quote('id')} = t.{quote(item.via_column)}")
    return f"SELECT t.{quote(item.owner_column)} AS owner FROM {rows} t"


# Each write adds or bumps the row of its own transaction (of the table or of each owner it touched).
_LOG_TABLE = (
    "INSERT INTO {log} (table_name, txid, transactions, txid_sum, writes) VALUES ({table}, {txid}, 1, {mark}, 1) "
    "ON CONFLICT (table_name, txid) DO UPDATE SET writes = {log}.writes + 1{remark}"
)

_LOG_OWNERS = (
    "INSERT INTO {log} (scope, owner_id, txid, transactions, txid_sum, writes) "
    "SELECT '{scope}', owner, {txid}, 1, {mark}, 1 FROM (SELECT DISTINCT owner FROM ({owners}) o) changed "
    "WHERE owner IS NOT NULL "
    "ON CONFLICT (scope, owner_id, txid) DO UPDATE SET writes = {log}.writes + 1{remark}"
)


@dataclass(frozen=True)
class Marks:
    """How a vendor's triggers mark a write: the transaction's key, the value its row adds to `txid_sum`, and
    what a later write in the same row sets. SQLite has no transaction ids, so every write there sets a new
    random `txid_sum`: a rolled-back write takes its value back with it, and the next write cannot bring
    the rolled-back state's fingerprint back (as a counter alone would)."""

    txid: str
    mark: str
    remark: str


# 40 random bits: a fingerprint sums an owner's rows over several scopes, and SQLite's SUM() of 64-bit
# values would overflow.
SQLITE_MARK = "(random() & 1099511627775)"

MARKS = {
    "postgresql": Marks("txid_current()", "txid_current()", ""),
    "sqlite": Marks("0", SQLITE_MARK, f", txid_sum = {SQLITE_MARK}"),
}


def _log_table_sql(table: str, vendor: str) -> str:
    """SQL that logs a write to the table `table` (an SQL expression of its name)."""
    marks = MARKS[vendor]
    return _LOG_TABLE.format(log=TABLE_LOG, table=table, txid=marks.txid, mark=marks.mark, remark=marks.remark)


def _log_owners_sql(item: OwnedTable, owners: str, vendor: str) -> str:
    """SQL that logs a write to each owner `owners` (SQL selecting a column `owner`) yields, in `item`'s scope."""
    marks = MARKS[vendor]
    return _LOG_OWNERS.format(log=OWNER_LOG, scope=item.scope, owners=owners, txid=marks.txid, mark=marks.mark,
                              remark=marks.remark)


def _sqlite_owners_of(item: OwnedTable, rows: tuple[str, ...], quote: Callable[[str], str]) -> str:
    """SQL for the owners of the row versions `rows` (NEW, OLD) in a SQLite row trigger on `item`'s table,
    which has no transition tables: through the via table when there is one."""
    if item.via_table:
        return " UNION ".join(
            f"SELECT (SELECT {quote(item.owner_column)} FROM {quote(item.via_table)} "
            f"WHERE id = {row}.{quote(item.via_column)}) AS owner" for row in rows
        )
    return " UNION ".join(f"SELECT {row}.{quote(item.owner_column)} AS owner" for row in rows)


def _present_tables(db) -> list[tuple[str, OwnedTable | None]]:
    """The scoped tables this database has, each with its ownership (None for a shared table)."""
    owned, _ = ownership(frozenset(SCOPE_MODELS))
    owned_by_table = {item.table: item for item in owned}
    existing = set(db.introspection.table_names())
    return [(table, owned_by_table.get(table)) for table in scoped_tables(frozenset(SCOPE_MODELS))
            if table in existing]


def _install_postgresql(db) -> None:
    quote = db.ops.quote_name
    with db.cursor() as cursor:
        cursor.execute("SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE tgname LIKE %s", ["atlas_log_%"])
        installed = set(cursor.fetchall())

        def create_trigger(table: str, name: str, definition: str) -> None:
            # A test run flushes and re-installs many times: a trigger that exists is left as it is.
            if (table, name) not in installed:
                cursor.execute(f"CREATE TRIGGER {name} {definition.format(table=quote(table))}")

        # PostgreSQL's triggers run once per statement; a TRUNCATE logs a write to every table.
        table = f"CASE WHEN TG_OP = 'TRUNCATE' THEN '{EVERY_TABLE}' ELSE TG_TABLE_NAME END"
        cursor.execute(
            "CREATE OR REPLACE FUNCTION atlas_log_table_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"{_log_table_sql(table, 'postgresql')}; RETURN NULL; END $$"
        )
        for table, item in _present_tables(db):
            create_trigger(table, "atlas_log_table_write", "AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
                           "FOR EACH STATEMENT EXECUTE FUNCTION atlas_log_table_write()")
            if item is None:
                continue
            function = quote(f"atlas_log_owner_write_{table}")

            def log_owners(rows: str, item: OwnedTable = item) -> str:
                return _log_owners_sql(item, _owners_of(item, rows, quote), "postgresql")

            # PL/pgSQL plans a statement when it first runs it, so each branch names only the transition
            # tables that its trigger events define.
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF TG_OP <> 'DELETE' THEN {log_owners('new_rows')}; END IF; "
                f"IF TG_OP <> 'INSERT' THEN {log_owners('old_rows')}; END IF; "
                "RETURN NULL; END $$"
            )
            # A trigger with transition tables handles a single event.
            for event, transition in (
                ("INSERT", "NEW TABLE AS new_rows"),
                ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
                ("DELETE", "OLD TABLE AS old_rows"),
            ):
                create_trigger(table, f"atlas_log_owner_{event.lower()}",
                               f"AFTER {event} ON {{table}} REFERENCING {transition} "
                               f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()")


def _install_sqlite(db) -> None:
    quote = db.ops.quote_name
    with db.cursor() as cursor:
        for table, item in _present_tables(db):
            # SQLite runs triggers once per row.
            for event, rows in (("INSERT", ("NEW",)), ("UPDATE", ("OLD", "NEW")), ("DELETE", ("OLD",))):
                log_owners = "" if item is None else (
                    _log_owners_sql(item, _sqlite_owners_of(item, rows, quote), "sqlite") + ";")
                name = quote(f"atlas_log_{table}_{event.lower()}")
                log_table = _log_table_sql(f"'{table}'", "sqlite")
                # Dropped and created again so that a changed definition replaces the old one.
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                cursor.execute(f"CREATE TRIGGER {name} AFTER {event} ON {quote(table)} BEGIN {log_table}; {log_owners} END")


def _log_every_write(db) -> None:
    """Log a write to every table and to every owner that has rows, as one more transaction."""
    quote = db.ops.quote_name
    present = _present_tables(db)
    tables = {table for table, _ in present}
    with db.cursor() as cursor:
        cursor.execute(_log_table_sql(f"'{EVERY_TABLE}'", db.vendor))
        for table, item in present:
            if item is not None and (not item.via_table or item.via_table in tables):
                cursor.execute(_log_owners_sql(item, _owners_of(item, quote(table), quote), db.vendor))


def write_log_install(*, using_connection=None) -> None:
    """Install (again) the triggers that log every write to a scoped table, and log one to every table and
    owner. Idempotent; run after every `migrate` (core's post_migrate handler), since a migration may add a
    table or rebuild one (SQLite rebuilds a table to alter it, dropping its triggers)."""
    db = using_connection or default_connection
    if db.vendor not in ("postgresql", "sqlite") or TABLE_LOG not in db.introspection.table_names():
        return
    with transaction.atomic(using=db.alias):
        (_install_postgresql if db.vendor == "postgresql" else _install_sqlite)(db)
        _log_every_write(db)


_COMPACT = (
    "WITH finished AS (DELETE FROM {log} WHERE txid <> 0 "
    "RETURNING {key}, transactions, txid_sum, writes), "
    "folded AS (INSERT INTO {log} ({key}, txid, transactions, txid_sum, writes) "
    "SELECT {key}, 0, SUM(transactions), SUM(txid_sum), SUM(writes) FROM finished GROUP BY {key} "
    "ON CONFLICT ({key}, txid) DO UPDATE SET transactions = {log}.transactions + EXCLUDED.transactions, "
    "txid_sum = {log}.txid_sum + EXCLUDED.txid_sum, writes = {log}.writes + EXCLUDED.writes) "
    "SELECT COUNT(*) FROM finished"
)


def write_log_compact() -> int:
    """Fold the log rows of committed transactions into one row per table and per owner (txid 0), keeping
    their sums, so no fingerprint moves; returns how many rows were folded. A transaction still running is
    left alone: its rows are invisible here until it commits, and it never writes again after. SQLite's log
    never grows (its triggers bump one row per table and per owner)."""
    if default_connection.vendor != "postgresql":
        return 0
    folded = 0
    with transaction.atomic(), default_connection.cursor() as cursor:
        for log, key in ((TABLE_LOG, "table_name"), (OWNER_LOG, "scope, owner_id")):
            cursor.execute(_COMPACT.format(log=log, key=key))
            folded += cursor.fetchone()[0]
    return folded
