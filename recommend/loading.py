"""Load `fixtures/use_cases.yaml`: use cases and their ordered recommendations, upserted by natural key.

Called by the catalog's `load_catalog` after the catalog sections, inside the same transaction, so the
tools and seed sources it names (fixtures/catalog/) already exist. Loading twice changes nothing the second time, and
rows that exist only in the database are left alone.
A recommendation naming a tool the catalog does not have is skipped and counted, never invented.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from core.loading import FixtureError, LoadOptions, read_yaml
from catalog.models import Source, Tool, UseCase, UseCaseRecommendation

logger = logging.getLogger(__name__)

FIXTURE_NAME = "use_cases.yaml"
USE_CASE_FIELDS = ("title", "question", "group", "summary")


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _save_if_changed(instance, values: dict[str, Any], *, path: Path, label: str, options: LoadOptions) -> str:
    created = instance.pk is None
    changes = options.apply(instance, values, label=label)
    if not changes:
        return "unchanged"
    try:
        instance.full_clean(validate_unique=False)
    except ValidationError as exc:
        name, messages = next(iter(exc.message_dict.items()))
        raise FixtureError(path=path, row=label, field=name, message="; ".join(messages)) from exc
    instance.save()
    options.record(instance, changes, created=created)
    return "created" if created else "updated"


@transaction.atomic
def load(*, fixtures_dir: Path, options: LoadOptions | None = None) -> dict[str, int]:
    options = options or LoadOptions()
    path = Path(fixtures_dir) / FIXTURE_NAME
    if not path.exists():
        return {}
    data = read_yaml(path) or {}
    counts = {"created": 0, "updated": 0, "unchanged": 0, "skipped_missing_tool": 0}

    sources = {source.key: source for source in Source.objects.all()}
    tools = {tool.slug: tool for tool in Tool.objects.only("id", "slug")}

    def source_for(key: str, label: str) -> Source:
        if key not in sources:
            raise FixtureError(path=path, row=label, field="source", message=f"unknown source key {key!r}")
        return sources[key]

    for position, row in enumerate(data.get("use_cases") or [], start=1):
        slug = row.get("slug")
        label = f"use case {slug or position}"
        if not slug:
            raise FixtureError(path=path, row=label, field="slug", message="required")
        use_case = UseCase.objects.filter(slug=slug).first() or UseCase(slug=slug)
        values = {name: _text(row.get(name)) for name in USE_CASE_FIELDS}
        values["position"] = position
        counts[_save_if_changed(use_case, values, path=path, label=label, options=options)] += 1
        wanted_sources = [source_for(key, label) for key in row.get("sources") or []]
        if {source.pk for source in use_case.sources.all()} != {source.pk for source in wanted_sources}:
            use_case.sources.set(wanted_sources)

        for rec_position, rec in enumerate(row.get("recommendations") or [], start=1):
            rec_label = f"{label}, recommendation {rec_position}"
            tool = tools.get(rec.get("tool"))
            if tool is None:
                logger.warning("%s: %s names tool %r, which the catalog does not have; skipped.",
                               path.name, rec_label, rec.get("tool"))
                counts["skipped_missing_tool"] += 1
                continue
            recommendation = (
                UseCaseRecommendation.objects.filter(use_case=use_case, tool=tool).first()
                or UseCaseRecommendation(use_case=use_case, tool=tool)
            )
            rec_values = {
                "position": rec_position,
                "reason": _text(rec.get("reason")),
                "is_recommended": bool(rec.get("recommended", True)),
                "source_id": source_for(rec.get("source", ""), rec_label).pk,
            }
            counts[_save_if_changed(recommendation, rec_values, path=path, label=rec_label, options=options)] += 1
    return counts
