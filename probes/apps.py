from django.apps import AppConfig


class ProbesConfig(AppConfig):
    name = "probes"
    verbose_name = "Probes"

    def ready(self) -> None:
        from catalog.extensions import tool_detail_field_register
        from probes.apis import MeasurementSummaryOutputSerializer
        from probes.selectors.api import measurement_summary_list

        tool_detail_field_register(
            name="measurement_summaries",
            field=lambda source: MeasurementSummaryOutputSerializer(
                many=True, source=source,
                help_text="Measured by the project's probes, per target of this tool; empty until a probe has run.",
            ),
            value=lambda tool: list(measurement_summary_list(filters={"tool": tool.slug})),
        )
