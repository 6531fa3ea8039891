"""The lab took its models over from the probes app: a database migrated across the move keeps the tables, their
rows, and the content types the admin permissions name."""
import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from lab.models import SweepLevel, SweepRun


@pytest.mark.django_db(transaction=True)
def test_a_database_with_lab_rows_keeps_them_and_their_permissions_across_the_move():
    run_type = ContentType.objects.get_for_model(SweepRun)
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate([("lab", None)])
    try:
        before = MigrationExecutor(connection).loader.project_state(("probes", "0004_sweep_runs")).apps
        assert ContentType.objects.get(pk=run_type.pk).app_label == "probes"
        old_run = before.get_model("probes", "SweepRun").objects.create(status="succeeded", workload_name="chat")
        before.get_model("probes", "SweepLevel").objects.create(run=old_run, mode="concurrency", level=4.0)
    finally:
        MigrationExecutor(connection).migrate(latest)
    ContentType.objects.clear_cache()

    run = SweepRun.objects.get(pk=old_run.pk)
    assert (run.status, run.workload_name) == ("succeeded", "chat")
    assert list(run.levels.values_list("level", flat=True)) == [4.0]
    assert SweepLevel.objects.count() == 1
    assert ContentType.objects.get_for_model(SweepRun).pk == run_type.pk
    assert not ContentType.objects.filter(app_label="probes", model__in=["sweeprun", "sweeplevel"]).exists()
