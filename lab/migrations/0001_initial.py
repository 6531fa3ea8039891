"""The lab takes over the benchmark-lab models the probes app created (probes 0004): their tables keep their
names, so only the migration state moves, and so do the content types, with the admin permissions that name
them."""
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

MODELS = ["sweeprun", "sweeplevel"]


def content_types_to(app_label: str, *, source: str):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        ContentType.objects.filter(app_label=source, model__in=MODELS).update(app_label=app_label)

    return move


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('catalog', '0003_merge_models_and_api_surface_checks'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('probes', '0004_sweep_runs'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='SweepRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('kind', models.CharField(choices=[('sweep', 'Throughput sweep'), ('prefill_decode', 'Prefill vs decode'), ('prefix_cache', 'Prefix cache'), ('structured_output', 'Structured output')], default='sweep', max_length=20)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('stopped', 'Stopped (resumable)'), ('succeeded', 'Succeeded'), ('partial', 'Ended early'), ('failed', 'Failed'), ('imported', 'Imported')], db_index=True, default='queued', max_length=12)),
                        ('source_tool', models.CharField(default='inference-atlas', help_text='"inference-atlas", or the peer tool whose result file was imported.', max_length=40)),
                        ('hardware_count', models.PositiveIntegerField(default=1)),
                        ('hourly_price_usd', models.DecimalField(blank=True, decimal_places=4, max_digits=10, null=True)),
                        ('flags', models.TextField(blank=True, help_text='Engine flags as the operator entered them.')),
                        ('workload_name', models.CharField(blank=True, max_length=80)),
                        ('workload_key', models.CharField(blank=True, db_index=True, help_text='Hash of the workload.', max_length=64)),
                        ('workload', models.JSONField(blank=True, default=dict)),
                        ('plan', models.JSONField(blank=True, default=dict, help_text="Levels, SLO, limits, or the suite's parameters.")),
                        ('card', models.JSONField(blank=True, default=dict)),
                        ('engine_version', models.CharField(blank=True, max_length=120)),
                        ('model_fingerprint', models.CharField(blank=True, max_length=300)),
                        ('changes', models.JSONField(blank=True, default=dict, help_text="What changed since the target's previous run: {engine_version|model: {old, new}}.")),
                        ('results', models.JSONField(blank=True, default=dict, help_text="A suite's result, or a sweep's knee.")),
                        ('levels_total', models.PositiveIntegerField(default=0)),
                        ('levels_done', models.PositiveIntegerField(default=0)),
                        ('stop_requested', models.BooleanField(default=False)),
                        ('stopped_reason', models.CharField(blank=True, max_length=40)),
                        ('error_class', models.CharField(blank=True, max_length=60)),
                        ('error_message', models.TextField(blank=True)),
                        ('worker', models.CharField(blank=True, max_length=200)),
                        ('task_id', models.CharField(blank=True, max_length=80)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                        ('queued_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('hardware', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='sweep_runs', to='catalog.hardwarespec')),
                        ('target', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='sweep_runs', to='probes.probetarget')),
                        ('tool', models.ForeignKey(blank=True, help_text="The engine measured (the target's tool, or named by an import).", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='sweep_runs', to='catalog.tool')),
                    ],
                    options={
                        'db_table': 'probes_sweeprun',
                        'ordering': ['-queued_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='SweepLevel',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('mode', models.CharField(help_text='"concurrency" (closed loop) or "rate" (open loop).', max_length=12)),
                        ('level', models.FloatField(help_text='Concurrent streams, or requests per second.')),
                        ('requests', models.PositiveIntegerField(default=0)),
                        ('ok', models.PositiveIntegerField(default=0)),
                        ('duration_s', models.FloatField(blank=True, null=True)),
                        ('ttft_ms', models.JSONField(blank=True, default=dict)),
                        ('tpot_ms', models.JSONField(blank=True, default=dict)),
                        ('itl_ms', models.JSONField(blank=True, default=dict)),
                        ('e2e_ms', models.JSONField(blank=True, default=dict)),
                        ('output_tps', models.FloatField(blank=True, null=True)),
                        ('total_tps', models.FloatField(blank=True, null=True)),
                        ('request_rate', models.FloatField(blank=True, null=True)),
                        ('goodput_rps', models.FloatField(blank=True, null=True)),
                        ('slo_attainment', models.FloatField(blank=True, null=True)),
                        ('meets_slo', models.BooleanField(blank=True, null=True)),
                        ('cost_per_1m_output_usd', models.FloatField(blank=True, null=True)),
                        ('errors', models.JSONField(blank=True, default=dict)),
                        ('output_tokens_source', models.CharField(blank=True, max_length=20)),
                        ('truncated', models.BooleanField(default=False)),
                        ('schedule_lag_ms', models.JSONField(blank=True, null=True)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='levels', to='lab.sweeprun')),
                    ],
                    options={
                        'db_table': 'probes_sweeplevel',
                        'ordering': ['run', 'level'],
                    },
                ),
                migrations.AddIndex(
                    model_name='sweeprun',
                    index=models.Index(fields=['target', 'kind', '-queued_at'], name='sweep_target_kind_recent'),
                ),
                migrations.AddConstraint(
                    model_name='sweeprun',
                    constraint=models.UniqueConstraint(condition=models.Q(('status', 'running')), fields=('target',), name='one_running_sweep_per_target'),
                ),
                migrations.AddConstraint(
                    model_name='sweeplevel',
                    constraint=models.UniqueConstraint(fields=('run', 'level'), name='sweep_level_unique_per_run'),
                ),
            ],
        ),
        migrations.RunPython(
            content_types_to("lab", source="probes"), reverse_code=content_types_to("probes", source="lab")
        ),
    ]
