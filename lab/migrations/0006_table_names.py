# The sweep tables keep the names they were created with in the probes app no longer: they are the lab's.
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("lab", "0005_sweeprun_leased_run"),
    ]

    operations = [
        migrations.AlterModelTable(name="sweeprun", table=None),
        migrations.AlterModelTable(name="sweeplevel", table=None),
    ]
