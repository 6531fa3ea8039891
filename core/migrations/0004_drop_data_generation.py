from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("core", "0003_data_generation")]

    operations = [migrations.DeleteModel(name="DataGeneration")]
