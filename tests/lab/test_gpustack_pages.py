"""docs/catalog-data.md lists every GPUStack performance-lab page, transcribed or rejected; the fixture agrees."""
import re
from collections import defaultdict
from pathlib import Path

import yaml
from django.conf import settings

from core.loading import default_fixtures_dir
from lab.loading import FILENAME

CATALOG_DOC = Path(settings.BASE_DIR) / "docs" / "catalog-data.md"
HEADING = "### GPUStack performance-lab pages\n"
PAGES_DIR = "docs/performance-lab/"
STATUSES = {"transcribed", "rejected"}


def documented_pages(text: str) -> list[dict]:
    """The rows of the table under HEADING: the page's paths (current name first), status, series count,
    engine slugs and the text saying what was taken or why not."""
    section = text.split(HEADING, 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.MULTILINE)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 5:
            continue
        paths, status, series, engines, why = cells
        rows.append({"paths": re.findall(r"`([^`]+)`", paths), "status": status, "series": int(series),
                     "engines": set(re.findall(r"`([^`]+)`", engines)), "why": why})
    return rows


def fixture_pages() -> dict[str, list[str]]:
    """Engines of the GPUStack entries, per page path (relative to PAGES_DIR) named in `read_from`."""
    entries = yaml.safe_load((default_fixtures_dir() / FILENAME).read_text())["published_benchmarks"]
    pages: dict[str, list[str]] = defaultdict(list)
    for entry in entries:
        if entry["publisher"] != "GPUStack":
            continue
        path = entry["read_from"].split(" ", 1)[1]
        assert path.startswith(PAGES_DIR), f"{entry['key']}: read_from names no performance-lab page"
        pages[path.removeprefix(PAGES_DIR)].append(entry["engine"])
    return pages


def disagreements(rows: list[dict], fixture: dict[str, list[str]]) -> list[str]:
    """Where the documented table and the fixture's GPUStack entries disagree, one line each."""
    named = [path for row in rows for path in row["paths"]]
    problems = [f"{path}: listed twice" for path in sorted({p for p in named if named.count(p) > 1})]
    problems += [f"{path}: in the fixture, not in the table" for path in sorted(set(fixture) - set(named))]
    for row in rows:
        page = row["paths"][0]
        engines = [engine for path in row["paths"] for engine in fixture.get(path, [])]
        if row["status"] not in STATUSES:
            problems.append(f"{page}: status {row['status']!r}")
        if not row["why"]:
            problems.append(f"{page}: says neither what was taken nor why not")
        if (row["status"] == "transcribed") != bool(engines):
            problems.append(f"{page}: {row['status']}, with {len(engines)} series in the fixture")
        if (row["series"], row["engines"]) != (len(engines), set(engines)):
            problems.append(f"{page}: table says {row['series']} series of {sorted(row['engines'])}, "
                            f"fixture has {len(engines)} of {sorted(set(engines))}")
    return problems


def test_the_documented_table_of_gpustack_pages_and_the_fixture_agree():
    rows = documented_pages(CATALOG_DOC.read_text())

    assert len(rows) > 20
    assert disagreements(rows, fixture_pages()) == []


def test_a_page_left_out_miscounted_or_rejected_while_loaded_is_a_disagreement():
    text = CATALOG_DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `qwen3-32b/a100.md`"))
    fixture = fixture_pages()

    left_out = disagreements(documented_pages(text.replace(row + "\n", "")), fixture)
    miscounted = disagreements(documented_pages(text.replace(row, row.replace("| 3 |", "| 2 |"))), fixture)
    rejected = disagreements(documented_pages(text.replace(row, row.replace("| transcribed |", "| rejected |"))),
                             fixture)
    unlisted_entry = disagreements(documented_pages(text), {**fixture, "qwen3-4b/h100.md": ["vllm"]})

    assert left_out == ["qwen3-32b/a100.md: in the fixture, not in the table"]
    assert miscounted == ["qwen3-32b/a100.md: table says 2 series of ['sglang', 'tensorrt-llm', 'vllm'], "
                          "fixture has 3 of ['sglang', 'tensorrt-llm', 'vllm']"]
    assert rejected == ["qwen3-32b/a100.md: rejected, with 3 series in the fixture"]
    assert unlisted_entry == ["qwen3-4b/h100.md: in the fixture, not in the table"]
