from django.db import migrations


class Migration(migrations.Migration):
    """Joins two migrations written in parallel; no operation of its own."""

    dependencies = [
        ("catalog", "0002_models_offerings_reported_figures"),
        ("catalog", "0002_tool_api_surface_checks"),
    ]

    operations = []
