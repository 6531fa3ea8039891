"""Load the catalog fixtures (YAML files under ``fixtures/catalog/``) into the database.

Every row is upserted by its natural key, so loading twice changes nothing the second time and
rows that exist only in the database (added in the admin, say) are never touched. Each row is
validated with ``full_clean`` before it is saved; the first bad row aborts the whole load with a
:class:`core.loading.FixtureError` that names the file, the row and the field, and the transaction
rolls back. The engine is :class:`core.loading.SpecLoader`; this module describes the catalog's sections.

The fixture format is described in ``docs/catalog-data.md``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction

from catalog.models import (
    ABSENCE_ASPECTS,
    ApiSurface,
    Caveat,
    DocumentedAbsence,
    Feature,
    HardwareSpec,
    HardwareSupport,
    HardwareTarget,
    LanguageModel,
    Licence,
    ModelOffering,
    PriceItem,
    QuantFormat,
    ReportedFigure,
    Source,
    Tool,
    ToolApiSurface,
    ToolFeature,
    ToolQuantFormat,
)
from core.loading import (
    Counts,
    FixtureError,
    LoadOptions,
    Ref,
    Row,
    Spec,
    SpecLoader,
    default_fixtures_dir,
    identity_of,
    read_rows,
    row_label,
    to_boolean,
    to_date,
    to_decimal,
    to_integer,
    to_text,
)

CATALOG_SUBDIR = "catalog"

SOURCE = Ref(Source, "key")


def _to_checks(value: Any) -> dict:
    """Check name → an outcome, or a mapping of its details, kept as JSON for ToolApiSurface.clean to judge."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping, got {value!r}")
    return {str(name): {str(key): item for key, item in entry.items()} if isinstance(entry, dict) else to_text(entry)
            for name, entry in value.items()}


SPECS: dict[str, Spec] = {
    "sources": Spec(
        Source,
        key=("key",),
        required=("title",),
        fields={
            "key": to_text, "title": to_text, "url": to_text, "publisher": to_text, "verified_on": to_date,
            "notes": to_text,
        },
    ),
    "licences": Spec(
        Licence,
        key=("spdx_id",),
        required=("name",),
        fields={"spdx_id": to_text, "name": to_text, "is_open_source": to_boolean, "url": to_text},
    ),
    "hardware_targets": Spec(
        HardwareTarget,
        key=("slug",),
        required=("name", "category"),
        fields={"slug": to_text, "name": to_text, "vendor": to_text, "category": to_text, "position": to_integer},
        auto_position=True,
    ),
    "quant_formats": Spec(
        QuantFormat,
        key=("slug",),
        required=("name",),
        fields={
            "slug": to_text,
            "name": to_text,
            "description": to_text,
            "hardware_requirement": to_text,
            "bits_per_weight": to_decimal,
            "source": SOURCE,
        },
    ),
    "api_surfaces": Spec(
        ApiSurface,
        key=("slug",),
        required=("name",),
        fields={"slug": to_text, "name": to_text, "description": to_text},
    ),
    "features": Spec(
        Feature,
        key=("slug",),
        required=("name",),
        fields={"slug": to_text, "name": to_text, "description": to_text, "position": to_integer},
        auto_position=True,
    ),
    "models": Spec(
        LanguageModel,
        key=("slug",),
        required=("name", "publisher", "source"),
        fields={
            "slug": to_text,
            "name": to_text,
            "publisher": to_text,
            "summary": to_text,
            "params_total_b": to_decimal,
            "params_active_b": to_decimal,
            "context_tokens": to_integer,
            "licence": Ref(Licence, "spdx_id"),
            "weights_url": to_text,
            "position": to_integer,
            "source": SOURCE,
        },
        auto_position=True,
    ),
    "tools": Spec(
        Tool,
        key=("slug",),
        required=("name", "kind"),
        fields={
            "slug": to_text,
            "name": to_text,
            "kind": to_text,
            "family": to_text,
            "summary": to_text,
            "rating": to_decimal,
            "rating_source": SOURCE,
            "rank": to_integer,
            "verdict": to_text,
            "ideal_for": to_text,
            "pricing_summary": to_text,
            "licence": Ref(Licence, "spdx_id"),
            "repository_url": to_text,
            "website_url": to_text,
            "last_verified": to_date,
            "latest_version": to_text,
            "latest_version_released_on": to_date,
            "latest_version_source": SOURCE,
        },
        children=("sources", "prices", "hardware", "quant_formats", "api_surfaces", "features", "not_supported",
                  "caveats"),
    ),
    "hardware_specs": Spec(
        HardwareSpec,
        key=("slug",),
        required=("name", "vendor", "memory_gb", "bandwidth_gb_s", "source"),
        fields={
            "slug": to_text,
            "name": to_text,
            "vendor": to_text,
            "hardware_target": Ref(HardwareTarget, "slug"),
            "memory_gb": to_decimal,
            "bandwidth_gb_s": to_decimal,
            "memory_kind": to_text,
            "is_unified_memory": to_boolean,
            "generation": to_text,
            "is_datacenter": to_boolean,
            "notes": to_text,
            "position": to_integer,
            "source": SOURCE,
        },
        auto_position=True,
    ),
    "model_offerings": Spec(
        ModelOffering,
        key=("tool", "model"),
        required=("tool", "model", "source"),
        fields={
            "tool": Ref(Tool, "slug"),
            "model": Ref(LanguageModel, "slug"),
            "api_model_id": to_text,
            "context_tokens": to_integer,
            "notes": to_text,
            "verified_on": to_date,
            "source": SOURCE,
        },
    ),
    # A third-party figure is shown only with who published it, where and when: a row missing any of
    # them is rejected rather than loaded as an unsourced number.
    "reported_figures": Spec(
        ReportedFigure,
        key=("key",),
        required=("tool", "metric", "value", "publisher", "url", "observed_on", "verified_on"),
        fields={
            "key": to_text,
            "tool": Ref(Tool, "slug"),
            "model": Ref(LanguageModel, "slug"),
            "hardware": Ref(HardwareSpec, "slug"),
            "device_count": to_integer,
            "metric": to_text,
            "value": to_decimal,
            "is_approximate": to_boolean,
            "concurrency": to_integer,
            "workload": to_text,
            "publisher": to_text,
            "url": to_text,
            "observed_on": to_date,
            "verified_on": to_date,
            "source": SOURCE,
            "notes": to_text,
            "position": to_integer,
        },
        auto_position=True,
    ),
}

# Rows nested under a tool; the tool itself is the first part of each natural key.
TOOL_CHILD_SPECS: dict[str, Spec] = {
    "prices": Spec(
        PriceItem,
        key=("item", "unit", "tier"),
        optional_key=("tier",),
        required=("item", "unit", "source"),
        fields={
            "item": to_text,
            "unit": to_text,
            "tier": to_text,
            "input_usd_per_mtok": to_decimal,
            "output_usd_per_mtok": to_decimal,
            "amount_usd": to_decimal,
            "discount_percent": to_decimal,
            "is_lower_bound": to_boolean,
            "notes": to_text,
            "position": to_integer,
            "verified_on": to_date,
            "source": SOURCE,
            "model": Ref(LanguageModel, "slug"),
        },
        auto_position=True,
    ),
    "hardware": Spec(
        HardwareSupport,
        key=("hardware",),
        required=("hardware", "level", "source"),
        fields={"hardware": Ref(HardwareTarget, "slug"), "level": to_text, "notes": to_text, "source": SOURCE},
    ),
    "quant_formats": Spec(
        ToolQuantFormat,
        key=("quant_format",),
        required=("quant_format", "source"),
        fields={"quant_format": Ref(QuantFormat, "slug"), "notes": to_text, "source": SOURCE},
    ),
    "api_surfaces": Spec(
        ToolApiSurface,
        key=("api_surface",),
        required=("api_surface", "source"),
        fields={"api_surface": Ref(ApiSurface, "slug"), "gaps": to_text, "checks": _to_checks, "source": SOURCE},
    ),
    "features": Spec(
        ToolFeature,
        key=("feature",),
        required=("feature", "source"),
        fields={"feature": Ref(Feature, "slug"), "notes": to_text, "source": SOURCE},
    ),
    "not_supported": Spec(
        DocumentedAbsence,
        key=ABSENCE_ASPECTS,
        optional_key=ABSENCE_ASPECTS,
        required=("source",),
        fields={
            "hardware": Ref(HardwareTarget, "slug"), "quant_format": Ref(QuantFormat, "slug"),
            "feature": Ref(Feature, "slug"), "api_surface": Ref(ApiSurface, "slug"), "notes": to_text,
            "source": SOURCE,
        },
    ),
    "caveats": Spec(
        Caveat,
        key=("key",),
        required=("key", "severity", "title", "body", "source"),
        fields={"key": to_text, "severity": to_text, "title": to_text, "body": to_text, "source": SOURCE},
    ),
}

SECTION_ORDER = ("sources", "licences", "hardware_targets", "quant_formats", "api_surfaces", "features", "models",
                 "tools", "hardware_specs", "model_offerings", "reported_figures")
COUNT_NAMES = SECTION_ORDER + tuple(f"tool_{name}" for name in TOOL_CHILD_SPECS) + ("tool_sources",)


class _CatalogLoader(SpecLoader):
    """The generic engine, plus a tool's nested rows and its links to sources."""

    def __init__(self, options: LoadOptions) -> None:
        super().__init__(specs=SPECS, count_names=COUNT_NAMES, options=options)
        self._tool_source_links: set[tuple[int, int]] | None = None

    def load_children(self, instance: Tool, row: Row) -> None:
        tool = instance
        source_keys = row.data.get("sources") or []
        if not isinstance(source_keys, list):
            raise FixtureError(path=row.path, row=row.label, field="sources", message="expected a list of source keys")
        wanted = [self.resolve(SOURCE, key, path=row.path, label=row.label, field_name="sources")
                  for key in source_keys]
        if self._tool_source_links is None:
            self._tool_source_links = set(Tool.sources.through.objects.values_list("tool_id", "source_id"))
        missing = list({source.pk: source for source in wanted
                        if (tool.pk, source.pk) not in self._tool_source_links}.values())
        # Sources are only ever added: a source linked in the admin stays linked.
        tool.sources.add(*missing)
        self._tool_source_links.update((tool.pk, source.pk) for source in missing)
        self.counts["tool_sources"].created += len(missing)
        self.counts["tool_sources"].unchanged += len(wanted) - len(missing)

        for child_name, spec in TOOL_CHILD_SPECS.items():
            entries = row.data.get(child_name) or []
            if not isinstance(entries, list):
                raise FixtureError(path=row.path, row=row.label, field=child_name, message="expected a list of rows")
            seen: set[tuple[Any, ...]] = set()
            for index, data in enumerate(entries):
                label = f"{row.label} > {row_label(child_name, index, data)}"
                if not isinstance(data, dict):
                    raise FixtureError(path=row.path, row=label, field="-", message="expected a mapping")
                values = self.convert(spec, data, allowed=set(spec.fields), path=row.path, label=label, index=index)
                if spec.model is PriceItem:
                    if data.get("verified_on") is None:
                        values["verified_on"] = values["source"].verified_on
                values["tool"] = tool
                identity = tuple(identity_of(values[name]) for name in spec.key)
                if identity in seen:
                    raise FixtureError(path=row.path, row=label, field=spec.key[0], message="duplicate row for this tool")
                seen.add(identity)
                self.upsert(spec, values, key=("tool", *spec.key), path=row.path, label=label,
                            counts=self.counts[f"tool_{child_name}"])


def load(*, fixtures_dir: Path | None = None, options: LoadOptions | None = None) -> dict[str, Counts]:
    """Upsert every catalog fixture row; returns created/updated/unchanged counts per section."""
    fixtures_dir = Path(fixtures_dir) if fixtures_dir is not None else default_fixtures_dir()
    rows = read_rows(fixtures_dir / CATALOG_SUBDIR, sections=SECTION_ORDER)
    with transaction.atomic():
        return _CatalogLoader(options or LoadOptions()).load(rows)


def load_counts(*, fixtures_dir: Path, options: LoadOptions) -> dict[str, dict[str, int]]:
    """:func:`load` as the loader registry calls it (``manage.py load_catalog``)."""
    return {name: counts.as_dict() for name, counts in load(fixtures_dir=fixtures_dir, options=options).items()}
