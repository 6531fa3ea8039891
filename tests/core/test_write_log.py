"""The write log behind the read cache's fingerprints (core.write_log): triggers that log every write inside
its transaction, writers that never wait for each other, and compacting that moves no fingerprint."""
import psycopg
import pytest
from django.db import connection

from catalog.models import Tool
from core.cache import data_fingerprint, owner_fingerprints
from core.models import OwnerWrite, TableWrite
from core.write_log import write_log_compact, write_log_install
from tests.factories import CaveatFactory, SourceFactory, ToolFactory

SCOPES = ["catalog", "probes"]


def _fingerprints() -> tuple[str, tuple[str, dict[int, str]]]:
    return data_fingerprint(SCOPES), owner_fingerprints(SCOPES)


def _other_connection() -> psycopg.Connection:
    """A second session on the test database, as another gunicorn or Celery process would hold."""
    database = connection.settings_dict
    other = psycopg.connect(
        dbname=database["NAME"], user=database["USER"], host=database["HOST"], port=database["PORT"] or 5432,
        password=database["PASSWORD"] or None,
    )
    other.execute("SET lock_timeout = '2s'")
    return other


@pytest.mark.django_db(transaction=True)
def test_compacting_folds_committed_transactions_and_moves_no_fingerprint():
    tools = [ToolFactory(slug=f"tool-{number}") for number in range(3)]
    for tool in tools:
        Tool.objects.filter(pk=tool.pk).update(verdict="Edited in a transaction of its own.")
    before = _fingerprints()
    assert TableWrite.objects.exclude(txid=0).count() > 1 and OwnerWrite.objects.exclude(txid=0).count() > 3

    with _other_connection() as other:
        other.execute("UPDATE catalog_tool SET verdict = 'Still running.' WHERE id = %s", [tools[0].pk])
        assert write_log_compact() > 0
        assert _fingerprints() == before
        assert not TableWrite.objects.exclude(txid=0).exists() and not OwnerWrite.objects.exclude(txid=0).exists()
        assert OwnerWrite.objects.filter(scope="catalog", owner_id=tools[0].pk).count() == 1
        other.commit()

    shared, after = owner_fingerprints(SCOPES)
    assert data_fingerprint(SCOPES) != before[0] and shared == before[1][0]
    assert after[tools[0].pk] != before[1][1][tools[0].pk]
    assert {tool.pk: after[tool.pk] for tool in tools[1:]} == {tool.pk: before[1][1][tool.pk] for tool in tools[1:]}
    assert write_log_compact() == 2  # the committed transaction's row for the tool table and the one for its tool
    assert owner_fingerprints(SCOPES) == (shared, after) and write_log_compact() == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_never_wait_for_each_other():
    first, second = ToolFactory(slug="first"), ToolFactory(slug="second")
    source = SourceFactory()
    with _other_connection() as one, _other_connection() as two:
        one.execute("UPDATE catalog_tool SET verdict = 'One.' WHERE id = %s", [first.pk])
        one.execute("UPDATE catalog_source SET title = 'Retitled by one.' WHERE id = %s", [source.pk])
        # Both write the same tables while the other's transaction is open: with counter rows bumped in
        # place, the second would wait for the first's row lock until lock_timeout.
        two.execute("UPDATE catalog_tool SET verdict = 'Two.' WHERE id = %s", [second.pk])
        two.execute("INSERT INTO catalog_source (key, title, url, publisher, notes, created_at, updated_at) "
                    "SELECT key || '-2', title, url, publisher, notes, now(), now() FROM catalog_source WHERE id = %s",
                    [source.pk])
        one.commit()
        two.commit()
    assert set(Tool.objects.values_list("verdict", flat=True)) == {"One.", "Two."}


@pytest.mark.django_db
def test_a_truncate_moves_every_fingerprint():
    tool = ToolFactory()
    CaveatFactory(tool=tool)
    page, owners = data_fingerprint(["probes"]), owner_fingerprints(SCOPES)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # Django's foreign keys are checked at commit
        cursor.execute("TRUNCATE catalog_caveat")
    assert data_fingerprint(["probes"]) != page  # a TRUNCATE logs a write to every table
    assert owner_fingerprints(SCOPES)[0] != owners[0]


@pytest.mark.django_db
def test_installing_again_logs_a_write_everywhere_and_adds_no_trigger():
    tool = ToolFactory()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pg_trigger WHERE tgname LIKE 'atlas_log_%%'")
        (triggers,) = cursor.fetchone()
    page, (shared, owners) = _fingerprints()
    write_log_install()
    assert data_fingerprint(SCOPES) != page
    assert owner_fingerprints(SCOPES)[0] != shared and owner_fingerprints(SCOPES)[1][tool.pk] != owners[tool.pk]
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pg_trigger WHERE tgname LIKE 'atlas_log_%%'")
        assert cursor.fetchone() == (triggers,)
    assert triggers >= 4 * 10  # a statement trigger on every scoped table, three more on every owned one
