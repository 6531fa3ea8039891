"""Load the catalog fixtures (YAML files under ``fixtures/catalog/``) into the database.

Every row is upserted by its natural key, so loading twice changes nothing the second time and
rows that exist only in the database (added in the admin, say) are never touched. Each row is
validated with ``full_clean`` before it is saved; the first bad row aborts the whole load with a
:class:`FixtureError` that names the file, the row and the field, and the transaction rolls back.

The fixture format is described in ``docs/catalog-data.md``.
"""
from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction

from catalog.models import (
    ApiSurface,
    Caveat,
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

CATALOG_SUBDIR = "catalog"
# libyaml's safe loader parses the fixtures about seven times faster than the pure-Python one.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_fixtures_dir() -> Path:
    return Path(settings.BASE_DIR) / "fixtures"


class FixtureError(Exception):
    """Bad fixture data; the message names the file, the row and the field."""

    def __init__(self, *, path: Path | str, row: str, field: str, message: str) -> None:
        self.path = str(path)
        self.row = row
        self.field = field
        self.message = message
        super().__init__(f"{self.path}: {row}: field '{field}': {message}")


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "unchanged": self.unchanged}


# --- field specifications -------------------------------------------------------------------

Converter = Callable[[Any], Any]


@dataclass(frozen=True)
class Ref:
    """A YAML value naming another row by its natural key."""

    model: type[models.Model]
    lookup: str


@dataclass(frozen=True)
class Spec:
    """How one YAML section maps onto a model: natural key, plain fields, references, children."""

    model: type[models.Model]
    key: tuple[str, ...]
    fields: Mapping[str, Converter | Ref]
    required: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    auto_position: bool = False


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise ValueError("expected text, got a list or mapping")
    return str(value).strip()


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    try:
        # str() first: a YAML float such as 0.6 must become Decimal("0.6"), not its binary expansion.
        return Decimal(str(value))
    except InvalidOperation as exc:
        raise ValueError(f"expected a number, got {value!r}") from exc


def _integer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected a whole number, got {value!r}")
    return value


def _boolean(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _date(value: Any) -> datetime.date | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError as exc:
        raise ValueError(f"expected a date (YYYY-MM-DD), got {value!r}") from exc


def _mapping(value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping, got {value!r}")
    return {str(key): _text(item) for key, item in value.items()}


SOURCE = Ref(Source, "key")

SPECS: dict[str, Spec] = {
    "sources": Spec(
        Source,
        key=("key",),
        required=("title",),
        fields={"key": _text, "title": _text, "url": _text, "publisher": _text, "verified_on": _date, "notes": _text},
    ),
    "licences": Spec(
        Licence,
        key=("spdx_id",),
        required=("name",),
        fields={"spdx_id": _text, "name": _text, "is_open_source": _boolean, "url": _text},
    ),
    "hardware_targets": Spec(
        HardwareTarget,
        key=("slug",),
        required=("name", "category"),
        fields={"slug": _text, "name": _text, "vendor": _text, "category": _text, "position": _integer},
        auto_position=True,
    ),
    "quant_formats": Spec(
        QuantFormat,
        key=("slug",),
        required=("name",),
        fields={
            "slug": _text,
            "name": _text,
            "description": _text,
            "hardware_requirement": _text,
            "bits_per_weight": _decimal,
            "source": SOURCE,
        },
    ),
    "api_surfaces": Spec(
        ApiSurface,
        key=("slug",),
        required=("name",),
        fields={"slug": _text, "name": _text, "description": _text},
    ),
    "features": Spec(
        Feature,
        key=("slug",),
        required=("name",),
        fields={"slug": _text, "name": _text, "description": _text, "position": _integer},
        auto_position=True,
    ),
    "models": Spec(
        LanguageModel,
        key=("slug",),
        required=("name", "publisher", "source"),
        fields={
            "slug": _text,
            "name": _text,
            "publisher": _text,
            "summary": _text,
            "params_total_b": _decimal,
            "params_active_b": _decimal,
            "context_tokens": _integer,
            "licence": Ref(Licence, "spdx_id"),
            "weights_url": _text,
            "position": _integer,
            "source": SOURCE,
        },
        auto_position=True,
    ),
    "tools": Spec(
        Tool,
        key=("slug",),
        required=("name", "kind"),
        fields={
            "slug": _text,
            "name": _text,
            "kind": _text,
            "family": _text,
            "summary": _text,
            "rating": _decimal,
            "rating_source": SOURCE,
            "rank": _integer,
            "verdict": _text,
            "ideal_for": _text,
            "pricing_summary": _text,
            "licence": Ref(Licence, "spdx_id"),
            "repository_url": _text,
            "website_url": _text,
            "last_verified": _date,
        },
        children=("sources", "prices", "hardware", "quant_formats", "api_surfaces", "features", "caveats"),
    ),
    "hardware_specs": Spec(
        HardwareSpec,
        key=("slug",),
        required=("name", "vendor", "memory_gb", "bandwidth_gb_s", "source"),
        fields={
            "slug": _text,
            "name": _text,
            "vendor": _text,
            "hardware_target": Ref(HardwareTarget, "slug"),
            "memory_gb": _decimal,
            "bandwidth_gb_s": _decimal,
            "memory_kind": _text,
            "is_unified_memory": _boolean,
            "notes": _text,
            "position": _integer,
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
            "api_model_id": _text,
            "context_tokens": _integer,
            "notes": _text,
            "verified_on": _date,
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
            "key": _text,
            "tool": Ref(Tool, "slug"),
            "model": Ref(LanguageModel, "slug"),
            "hardware": Ref(HardwareSpec, "slug"),
            "device_count": _integer,
            "metric": _text,
            "value": _decimal,
            "is_approximate": _boolean,
            "concurrency": _integer,
            "workload": _text,
            "publisher": _text,
            "url": _text,
            "observed_on": _date,
            "verified_on": _date,
            "source": SOURCE,
            "notes": _text,
            "position": _integer,
        },
        auto_position=True,
    ),
}

# Rows nested under a tool; the tool itself is the first part of each natural key.
TOOL_CHILD_SPECS: dict[str, Spec] = {
    "prices": Spec(
        PriceItem,
        key=("item", "unit", "tier"),
        required=("item", "unit", "source"),
        fields={
            "item": _text,
            "unit": _text,
            "tier": _text,
            "input_usd_per_mtok": _decimal,
            "output_usd_per_mtok": _decimal,
            "amount_usd": _decimal,
            "discount_percent": _decimal,
            "is_lower_bound": _boolean,
            "notes": _text,
            "position": _integer,
            "verified_on": _date,
            "source": SOURCE,
            "model": Ref(LanguageModel, "slug"),
        },
        auto_position=True,
    ),
    "hardware": Spec(
        HardwareSupport,
        key=("hardware",),
        required=("hardware", "level", "source"),
        fields={"hardware": Ref(HardwareTarget, "slug"), "level": _text, "notes": _text, "source": SOURCE},
    ),
    "quant_formats": Spec(
        ToolQuantFormat,
        key=("quant_format",),
        required=("quant_format", "source"),
        fields={"quant_format": Ref(QuantFormat, "slug"), "notes": _text, "source": SOURCE},
    ),
    "api_surfaces": Spec(
        ToolApiSurface,
        key=("api_surface",),
        required=("api_surface", "source"),
        fields={"api_surface": Ref(ApiSurface, "slug"), "gaps": _text, "checks": _mapping, "source": SOURCE},
    ),
    "features": Spec(
        ToolFeature,
        key=("feature",),
        required=("feature", "source"),
        fields={"feature": Ref(Feature, "slug"), "notes": _text, "source": SOURCE},
    ),
    "caveats": Spec(
        Caveat,
        key=("key",),
        required=("key", "severity", "title", "body", "source"),
        fields={"key": _text, "severity": _text, "title": _text, "body": _text, "source": SOURCE},
    ),
}

SECTION_ORDER = ("sources", "licences", "hardware_targets", "quant_formats", "api_surfaces", "features", "models",
                 "tools", "hardware_specs", "model_offerings", "reported_figures")
COUNT_NAMES = SECTION_ORDER + tuple(f"tool_{name}" for name in TOOL_CHILD_SPECS) + ("tool_sources",)


# --- reading the files ----------------------------------------------------------------------


@dataclass
class Row:
    path: Path
    section: str
    index: int
    data: dict[str, Any]
    label: str = field(init=False)

    def __post_init__(self) -> None:
        self.label = _row_label(self.section, self.index, self.data)


def _row_label(section: str, index: int, data: Mapping[str, Any]) -> str:
    for name in ("slug", "key", "spdx_id", "item", "hardware", "quant_format", "api_surface", "feature", "tool"):
        if isinstance(data, Mapping) and data.get(name) not in (None, ""):
            return f"{section}[{index}] ({name}={data[name]})"
    return f"{section}[{index}]"


def read_rows(catalog_dir: Path) -> dict[str, list[Row]]:
    """Every row of every YAML file in the directory, grouped by section, in file-name order."""
    rows: dict[str, list[Row]] = {section: [] for section in SECTION_ORDER}
    if not catalog_dir.is_dir():
        raise FixtureError(path=catalog_dir, row="(directory)", field="-", message="fixture directory not found")
    for path in sorted(catalog_dir.glob("*.yaml")):
        try:
            document = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER) or {}
        except yaml.YAMLError as exc:
            raise FixtureError(path=path, row="(file)", field="-", message=f"not valid YAML: {exc}") from exc
        if not isinstance(document, dict):
            raise FixtureError(path=path, row="(file)", field="-", message="expected a mapping of sections")
        for section, entries in document.items():
            if section not in SPECS:
                raise FixtureError(
                    path=path, row="(file)", field=str(section),
                    message=f"unknown section; expected one of {', '.join(SECTION_ORDER)}",
                )
            if not isinstance(entries, list):
                raise FixtureError(path=path, row=str(section), field="-", message="expected a list of rows")
            for index, data in enumerate(entries):
                row = Row(path, section, index, data)
                if not isinstance(data, dict):
                    raise FixtureError(path=path, row=row.label, field="-", message="expected a mapping")
                rows[section].append(row)
    return rows


# --- upserting ------------------------------------------------------------------------------


class _Loader:
    def __init__(self) -> None:
        self.counts: dict[str, Counts] = {name: Counts() for name in COUNT_NAMES}
        # Existing rows per model, by natural key, read once: a reload costs a handful of queries,
        # not one per fixture row.
        self._indexes: dict[tuple[type[models.Model], tuple[str, ...]], dict[tuple[Any, ...], models.Model]] = {}
        self._tool_source_links: set[tuple[int, int]] | None = None

    def _index(self, model: type[models.Model], key: tuple[str, ...]) -> dict[tuple[Any, ...], models.Model]:
        if (model, key) not in self._indexes:
            attnames = [model._meta.get_field(name).attname for name in key]
            self._indexes[model, key] = {
                tuple(getattr(instance, attname) for attname in attnames): instance
                for instance in model._default_manager.all()
            }
        return self._indexes[model, key]

    def load(self, rows: dict[str, list[Row]]) -> dict[str, Counts]:
        self._check_duplicates(rows)
        for section in SECTION_ORDER:
            spec = SPECS[section]
            for row in rows[section]:
                self._upsert_top_level(spec, row)
        return self.counts

    def _check_duplicates(self, rows: dict[str, list[Row]]) -> None:
        for section in SECTION_ORDER:
            seen: dict[tuple[Any, ...], Row] = {}
            for row in rows[section]:
                key = tuple(str(row.data.get(name)) for name in SPECS[section].key)
                if key in seen:
                    first = seen[key]
                    raise FixtureError(
                        path=row.path, row=row.label, field=SPECS[section].key[0],
                        message=f"duplicate of {first.path.name} {first.label}",
                    )
                seen[key] = row

    def _upsert_top_level(self, spec: Spec, row: Row) -> None:
        allowed = set(spec.fields) | set(spec.children)
        values = self._convert(spec, row.data, allowed=allowed, path=row.path, label=row.label, index=row.index)
        instance = self._upsert(spec, values, key=spec.key, path=row.path, label=row.label,
                                counts=self.counts[row.section])
        if spec.model is Tool:
            self._load_tool_children(instance, row)

    def _load_tool_children(self, tool: Tool, row: Row) -> None:
        source_keys = row.data.get("sources") or []
        if not isinstance(source_keys, list):
            raise FixtureError(path=row.path, row=row.label, field="sources", message="expected a list of source keys")
        wanted = [self._resolve(SOURCE, key, path=row.path, label=row.label, field_name="sources")
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
                label = f"{row.label} > {_row_label(child_name, index, data)}"
                if not isinstance(data, dict):
                    raise FixtureError(path=row.path, row=label, field="-", message="expected a mapping")
                values = self._convert(spec, data, allowed=set(spec.fields), path=row.path, label=label, index=index)
                if spec.model is PriceItem:
                    if data.get("verified_on") is None:
                        values["verified_on"] = values["source"].verified_on
                values["tool"] = tool
                identity = tuple(_identity(values[name]) for name in spec.key)
                if identity in seen:
                    raise FixtureError(path=row.path, row=label, field=spec.key[0], message="duplicate row for this tool")
                seen.add(identity)
                self._upsert(spec, values, key=("tool", *spec.key), path=row.path, label=label,
                             counts=self.counts[f"tool_{child_name}"])

    def _convert(self, spec: Spec, data: Mapping[str, Any], *, allowed: set[str], path: Path, label: str,
                 index: int) -> dict[str, Any]:
        for name in data:
            if name not in allowed:
                raise FixtureError(path=path, row=label, field=str(name),
                                   message=f"unknown field; expected one of {', '.join(sorted(allowed))}")
        for name in spec.required + spec.key:
            if name != "tier" and data.get(name) in (None, ""):
                raise FixtureError(path=path, row=label, field=name, message="this field is required")
        values: dict[str, Any] = {}
        for name, converter in spec.fields.items():
            if name not in data:
                # The fixture owns every field of its rows: an omitted field means "empty", so an
                # edit made in the admin to a fixture row is undone by the next load.
                values[name] = spec.model._meta.get_field(name).get_default()
                continue
            raw = data[name]
            if isinstance(converter, Ref):
                values[name] = None if raw in (None, "") else self._resolve(
                    converter, raw, path=path, label=label, field_name=name)
                continue
            try:
                values[name] = converter(raw)
            except ValueError as exc:
                raise FixtureError(path=path, row=label, field=name, message=str(exc)) from exc
        if spec.auto_position and data.get("position") is None:
            values["position"] = index + 1
        return values

    def _resolve(self, ref: Ref, key: Any, *, path: Path, label: str, field_name: str) -> models.Model:
        instance = self._index(ref.model, (ref.lookup,)).get((str(key),))
        if instance is None:
            raise FixtureError(path=path, row=label, field=field_name,
                               message=f"no {ref.model.__name__} with {ref.lookup} {key!r}")
        return instance

    def _upsert(self, spec: Spec, values: dict[str, Any], *, key: tuple[str, ...], path: Path, label: str,
                counts: Counts) -> models.Model:
        index = self._index(spec.model, key)
        identity = tuple(_identity(values[name]) for name in key)
        instance = index.get(identity)
        created = instance is None
        if created:
            instance = spec.model()
        changed = created
        for name, value in values.items():
            model_field = spec.model._meta.get_field(name)
            # Compare foreign keys by id so an unchanged row costs no query per reference.
            current = getattr(instance, model_field.attname)
            if created or current != _identity(value):
                setattr(instance, name, value)
                changed = True
        if not changed:
            counts.unchanged += 1
            return instance
        # References were resolved to existing rows and the natural key was looked up above, so the
        # per-row existence and uniqueness queries of full_clean would only repeat that work.
        relations = [name for name in values if spec.model._meta.get_field(name).is_relation]
        try:
            instance.full_clean(exclude=relations, validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            raise _fixture_error_from(exc, path=path, label=label) from exc
        instance.save()
        index[identity] = instance
        if created:
            counts.created += 1
        else:
            counts.updated += 1
        return instance


def _identity(value: Any) -> Any:
    return value.pk if isinstance(value, models.Model) else value


def _fixture_error_from(exc: ValidationError, *, path: Path, label: str) -> FixtureError:
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"-": exc.messages}
    field_name, messages = next(iter(errors.items()))
    if field_name == "__all__":
        field_name = "-"
    return FixtureError(path=path, row=label, field=field_name, message=" ".join(messages))


# --- entry points ---------------------------------------------------------------------------


def load(*, fixtures_dir: Path | None = None) -> dict[str, Counts]:
    """Upsert every catalog fixture row; returns created/updated/unchanged counts per section."""
    fixtures_dir = Path(fixtures_dir) if fixtures_dir is not None else default_fixtures_dir()
    rows = read_rows(fixtures_dir / CATALOG_SUBDIR)
    with transaction.atomic():
        return _Loader().load(rows)


def load_all(*, fixtures_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """The catalog, then the use cases and the probe targets that point at its tools, in one transaction.

    Returns ``{app: counts}``.
    """
    # Imported here: both loaders import this module for FixtureError.
    from probes import loading as probes_loading
    from recommend import loading as recommend_loading

    fixtures_dir = Path(fixtures_dir) if fixtures_dir is not None else default_fixtures_dir()
    with transaction.atomic():
        return {
            "catalog": {name: counts.as_dict() for name, counts in load(fixtures_dir=fixtures_dir).items()},
            "recommend": recommend_loading.load(fixtures_dir=fixtures_dir),
            "probes": probes_loading.load(fixtures_dir=fixtures_dir),
        }
