"""The benchmark-lab models belong to the lab now (lab 0001); their tables stay where they are."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('lab', '0001_initial'),
        ('probes', '0004_sweep_runs'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='SweepLevel'),
                migrations.DeleteModel(name='SweepRun'),
            ],
        ),
    ]
