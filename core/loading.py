"""The fixture loader engine.

Each app that ships fixture files has one loader, named in ``settings.FIXTURE_LOADERS`` in the order they run;
:func:`load_all` (run by ``manage.py load_catalog``) calls them in that order inside one transaction, so a bad
row in any file leaves the database as it was.

Apps whose fixtures are sections of YAML rows (the catalog) describe each section with a :class:`Spec`
and let :class:`SpecLoader` upsert the rows by natural key; apps with a single small file write their own
loader and raise :class:`FixtureError` the same way.
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
from django.utils.module_loading import import_string

from core.cache import generation_bump
from core.models import AuditEntry
from core.services import Changes, audit_entries_observe, audit_value

# libyaml's safe loader parses the fixtures about seven times faster than the pure-Python one.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def read_yaml(path: Path) -> Any:
    """The document in the YAML file at `path`; a syntax error is a one-line FixtureError naming its place."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FixtureError(path=path, row=place, field="-", message=f"not valid YAML: {problem}") from None


# --- what a load changes in rows that exist -----------------------------------------------------

# The name under which the loader's own writes are kept in the audit trail (core.models.AuditEntry).
LOADER_NAME = "load_catalog"


@dataclass(frozen=True)
class FieldChange:
    row: str
    field: str
    old: Any
    new: Any
    # Whether the value in the database is not the one the loader last wrote: someone edited it since.
    edited: bool


@dataclass
class LoadOptions:
    """What one `load_all` run decides and reports, shared by every app's loader."""

    keep_edits: bool = False
    changed: list[FieldChange] = field(default_factory=list)
    kept: list[FieldChange] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)
    _loaded: dict[tuple[str, str], dict[str, Any]] | None = None

    def last_loaded(self, instance: models.Model) -> dict[str, Any]:
        """{field: value} as the loader last wrote them to `instance`, from its entries in the audit trail."""
        if self._loaded is None:
            self._loaded = {}
            entries = AuditEntry.objects.filter(username=LOADER_NAME, user=None).order_by("created_at", "id")
            for object_type, object_id, changes in entries.values_list("object_type", "object_id", "changes"):
                loaded = self._loaded.setdefault((object_type, object_id), {})
                loaded.update({name: change["new"] for name, change in changes.items()})
        return self._loaded.get((instance._meta.label_lower, str(instance.pk)), {})

    def apply(self, instance: models.Model, values: Mapping[str, Any], *, label: str) -> Changes:
        """Set the fixture's `values` on `instance` where they differ; returns what changed (old and new).

        On a row that exists, each changed field is reported, and a field someone edited since the loader last
        wrote it is kept as it is when `keep_edits`."""
        created = instance.pk is None
        loaded = {} if created else self.last_loaded(instance)
        changes: Changes = {}
        for name, value in values.items():
            model_field = instance._meta.get_field(name)
            new = audit_value(_as_stored(model_field, value))
            if created:
                changes[name] = {"old": None, "new": new}
                setattr(instance, name, value)
                continue
            # Foreign keys compared by id, so an unchanged row costs no query per reference.
            if getattr(instance, model_field.attname) == identity_of(value):
                continue
            old = audit_value(getattr(instance, name))
            change = FieldChange(label, name, old, new, edited=name not in loaded or loaded[name] != old)
            if self.keep_edits and change.edited:
                self.kept.append(change)
                continue
            self.changed.append(change)
            setattr(instance, name, value)
            changes[name] = {"old": old, "new": new}
        return changes

    def record(self, instance: models.Model, changes: Changes, *, created: bool) -> None:
        """Queue the audit entry of a row that `apply` changed and the caller saved."""
        self.audit.append(AuditEntry(
            username=LOADER_NAME, action=AuditEntry.Action.CREATE if created else AuditEntry.Action.UPDATE,
            object_type=instance._meta.label_lower, object_id=str(instance.pk), object_repr=str(instance)[:300],
            changes=changes,
        ))


def _as_stored(model_field: models.Field, value: Any) -> Any:
    """`value` as the database will give it back: a decimal at the field's places."""
    if isinstance(model_field, models.DecimalField) and isinstance(value, Decimal):
        return value.quantize(Decimal(1).scaleb(-model_field.decimal_places))
    return value


# --- every app's fixtures ----------------------------------------------------------------


def load_all(
    *, fixtures_dir: Path | None = None, options: LoadOptions | None = None
) -> dict[str, Mapping[str, Any]]:
    """Every loader of ``settings.FIXTURE_LOADERS`` in its order, in one transaction; returns ``{loader: counts}``.
    What the load changed in existing rows (and kept, with `keep_edits`) is left in `options`."""
    fixtures_dir = Path(fixtures_dir) if fixtures_dir is not None else default_fixtures_dir()
    options = options or LoadOptions()
    with transaction.atomic():
        # The first load into a database sets its starting state: what it writes is not a change of anything.
        baseline = not AuditEntry.objects.filter(username=LOADER_NAME, user=None).exists()
        generation_bump()
        results = {name: import_string(load)(fixtures_dir=fixtures_dir, options=options)
                   for name, load in settings.FIXTURE_LOADERS.items()}
        AuditEntry.objects.bulk_create(options.audit)
        if not baseline:
            audit_entries_observe(entries=options.audit)
    return results


# --- field specifications -------------------------------------------------------------------


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "unchanged": self.unchanged}


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
    # Parts of the natural key a row may leave empty (its model's default then applies).
    optional_key: tuple[str, ...] = ()


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise ValueError("expected text, got a list or mapping")
    return str(value).strip()


def to_decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    try:
        # str() first: a YAML float such as 0.6 must become Decimal("0.6"), not its binary expansion.
        return Decimal(str(value))
    except InvalidOperation as exc:
        raise ValueError(f"expected a number, got {value!r}") from exc


def to_integer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected a whole number, got {value!r}")
    return value


def to_boolean(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def to_date(value: Any) -> datetime.date | None:
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


# --- reading the files ----------------------------------------------------------------------


@dataclass
class Row:
    path: Path
    section: str
    index: int
    data: dict[str, Any]
    label: str = field(init=False)

    def __post_init__(self) -> None:
        self.label = row_label(self.section, self.index, self.data)


def row_label(section: str, index: int, data: Mapping[str, Any]) -> str:
    for name in ("slug", "key", "spdx_id", "item", "hardware", "quant_format", "api_surface", "feature", "tool"):
        if isinstance(data, Mapping) and data.get(name) not in (None, ""):
            return f"{section}[{index}] ({name}={data[name]})"
    return f"{section}[{index}]"


def read_rows(directory: Path, *, sections: tuple[str, ...]) -> dict[str, list[Row]]:
    """Every row of every YAML file in the directory, grouped by section, in file-name order."""
    rows: dict[str, list[Row]] = {section: [] for section in sections}
    if not directory.is_dir():
        raise FixtureError(path=directory, row="(directory)", field="-", message="fixture directory not found")
    for path in sorted(directory.glob("*.yaml")):
        document = read_yaml(path) or {}
        if not isinstance(document, dict):
            raise FixtureError(path=path, row="(file)", field="-", message="expected a mapping of sections")
        for section, entries in document.items():
            if section not in rows:
                raise FixtureError(
                    path=path, row="(file)", field=str(section),
                    message=f"unknown section; expected one of {', '.join(sections)}",
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


class SpecLoader:
    """Upserts rows described by :class:`Spec` s, section by section, by natural key.

    Subclasses load nested rows in :meth:`load_children`, called after each top-level row is saved.
    """

    def __init__(self, *, specs: Mapping[str, Spec], count_names: tuple[str, ...], options: LoadOptions) -> None:
        self.specs = specs
        self.options = options
        self.counts: dict[str, Counts] = {name: Counts() for name in count_names}
        # Existing rows per model, by natural key, read once: a reload costs a handful of queries,
        # not one per fixture row.
        self._indexes: dict[tuple[type[models.Model], tuple[str, ...]], dict[tuple[Any, ...], models.Model]] = {}

    def index(self, model: type[models.Model], key: tuple[str, ...]) -> dict[tuple[Any, ...], models.Model]:
        if (model, key) not in self._indexes:
            attnames = [model._meta.get_field(name).attname for name in key]
            self._indexes[model, key] = {
                tuple(getattr(instance, attname) for attname in attnames): instance
                for instance in model._default_manager.all()
            }
        return self._indexes[model, key]

    def load(self, rows: dict[str, list[Row]]) -> dict[str, Counts]:
        self._check_duplicates(rows)
        for section, section_rows in rows.items():
            spec = self.specs[section]
            for row in section_rows:
                self._upsert_top_level(spec, row)
        return self.counts

    def load_children(self, instance: models.Model, row: Row) -> None:
        """Load the rows nested under ``instance``; the spec's ``children`` names them."""

    def _check_duplicates(self, rows: dict[str, list[Row]]) -> None:
        for section, section_rows in rows.items():
            seen: dict[tuple[Any, ...], Row] = {}
            for row in section_rows:
                key = tuple(str(row.data.get(name)) for name in self.specs[section].key)
                if key in seen:
                    first = seen[key]
                    raise FixtureError(
                        path=row.path, row=row.label, field=self.specs[section].key[0],
                        message=f"duplicate of {first.path.name} {first.label}",
                    )
                seen[key] = row

    def _upsert_top_level(self, spec: Spec, row: Row) -> None:
        allowed = set(spec.fields) | set(spec.children)
        values = self.convert(spec, row.data, allowed=allowed, path=row.path, label=row.label, index=row.index)
        instance = self.upsert(spec, values, key=spec.key, path=row.path, label=row.label,
                               counts=self.counts[row.section])
        if spec.children:
            self.load_children(instance, row)

    def convert(self, spec: Spec, data: Mapping[str, Any], *, allowed: set[str], path: Path, label: str,
                index: int) -> dict[str, Any]:
        for name in data:
            if name not in allowed:
                raise FixtureError(path=path, row=label, field=str(name),
                                   message=f"unknown field; expected one of {', '.join(sorted(allowed))}")
        for name in spec.required + spec.key:
            if name not in spec.optional_key and data.get(name) in (None, ""):
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
                values[name] = None if raw in (None, "") else self.resolve(
                    converter, raw, path=path, label=label, field_name=name)
                continue
            try:
                values[name] = converter(raw)
            except ValueError as exc:
                raise FixtureError(path=path, row=label, field=name, message=str(exc)) from exc
        if spec.auto_position and data.get("position") is None:
            values["position"] = index + 1
        return values

    def resolve(self, ref: Ref, key: Any, *, path: Path, label: str, field_name: str) -> models.Model:
        instance = self.index(ref.model, (ref.lookup,)).get((str(key),))
        if instance is None:
            raise FixtureError(path=path, row=label, field=field_name,
                               message=f"no {ref.model.__name__} with {ref.lookup} {key!r}")
        return instance

    def upsert(self, spec: Spec, values: dict[str, Any], *, key: tuple[str, ...], path: Path, label: str,
               counts: Counts) -> models.Model:
        index = self.index(spec.model, key)
        identity = tuple(identity_of(values[name]) for name in key)
        instance = index.get(identity)
        created = instance is None
        if created:
            instance = spec.model()
        changes = self.options.apply(instance, values, label=label)
        if not changes:
            counts.unchanged += 1
            return instance
        # References were resolved to existing rows and the natural key was looked up above, so the
        # per-row existence and uniqueness queries of full_clean would only repeat that work.
        relations = [name for name in values if spec.model._meta.get_field(name).is_relation]
        try:
            instance.full_clean(exclude=relations, validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            raise fixture_error_from(exc, path=path, label=label) from exc
        instance.save()
        self.options.record(instance, changes, created=created)
        index[identity] = instance
        if created:
            counts.created += 1
        else:
            counts.updated += 1
        return instance


def identity_of(value: Any) -> Any:
    return value.pk if isinstance(value, models.Model) else value


def fixture_error_from(exc: ValidationError, *, path: Path, label: str) -> FixtureError:
    """The first message of a model's ValidationError as a FixtureError naming the row and field."""
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"-": exc.messages}
    field_name, messages = next(iter(errors.items()))
    if field_name == "__all__":
        field_name = "-"
    return FixtureError(path=path, row=label, field=field_name, message=" ".join(messages))
