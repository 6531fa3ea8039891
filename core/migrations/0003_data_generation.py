import secrets

from django.db import migrations, models


def drop_write_log_triggers(apps, schema_editor):
    """The write log's triggers and functions: created outside Django's models, dropped by name."""
    connection = schema_editor.connection
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname, tgrelid::regclass::text FROM pg_trigger WHERE tgname LIKE 'atlas_log_%'")
            for name, table in cursor.fetchall():
                cursor.execute(f"DROP TRIGGER IF EXISTS {quote(name)} ON {table}")
            cursor.execute("SELECT proname FROM pg_proc WHERE proname LIKE 'atlas_log_%'")
            for (name,) in cursor.fetchall():
                cursor.execute(f"DROP FUNCTION IF EXISTS {quote(name)}()")
        elif connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'atlas_log_%'")
            for (name,) in cursor.fetchall():
                cursor.execute(f"DROP TRIGGER IF EXISTS {quote(name)}")


def create_generation(apps, schema_editor):
    generations = apps.get_model("core", "DataGeneration").objects.using(schema_editor.connection.alias)
    generations.get_or_create(pk=1, defaults={"number": secrets.randbits(48)})


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0002_write_log"),
    ]

    operations = [
        migrations.RunPython(drop_write_log_triggers, migrations.RunPython.noop),
        migrations.DeleteModel(name="OwnerWrite"),
        migrations.DeleteModel(name="TableWrite"),
        migrations.CreateModel(
            name="DataGeneration",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("number", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(create_generation, migrations.RunPython.noop),
    ]
