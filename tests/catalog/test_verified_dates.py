"""Every source and tool in the loaded catalog is dated, or listed with its reason in docs/catalog-data.md."""
import re
from pathlib import Path

import pytest
from django.conf import settings

from catalog.models import Source, Tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("real_catalog")]

CATALOG_DOC = Path(settings.BASE_DIR) / "docs" / "catalog-data.md"


def not_verified_list(heading: str) -> dict[str, str]:
    """Keys listed under ``heading``, each mapped to the reason after the colon of its bullet."""
    section = CATALOG_DOC.read_text().split(f"### {heading}\n", 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.MULTILINE)[0]
    listed: dict[str, str] = {}
    for bullet in re.split(r"^- ", section, flags=re.MULTILINE)[1:]:
        keys_part, _, reason = " ".join(bullet.split()).partition(": ")
        for key in re.findall(r"`([^`]+)`", keys_part):
            listed[key] = reason
    return listed


@pytest.mark.parametrize(("heading", "undated_rows", "noun"), [
    ("Sources not verified", lambda: Source.objects.filter(verified_on__isnull=True).values_list("key", flat=True),
     "source"),
    ("Tools not verified", lambda: Tool.objects.filter(last_verified__isnull=True).values_list("slug", flat=True),
     "tool"),
])
def test_every_undated_row_is_on_the_documented_not_verified_list(heading, undated_rows, noun):
    listed = not_verified_list(heading)
    undated = set(undated_rows())

    assert undated - listed.keys() == set(), f"undated {noun}s missing from docs/catalog-data.md"
    assert listed.keys() - undated == set(), "listed as not verified, but dated or unknown"
    assert all(listed.values()), f"every not-verified {noun} needs a reason"
