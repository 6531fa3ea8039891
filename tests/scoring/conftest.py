"""The real catalog's tools, hardware support and quantization formats, read straight from the fixture
YAML into scoring's plain values, so the rule tests run against the same data the site serves."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scoring.ranking import CatalogData, CaveatInfo, DocumentedCheck, PriceInfo, ToolInfo
from scoring.vocabulary import model_slug

CATALOG_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"


def catalog_from_fixtures() -> CatalogData:
    tools: dict[str, ToolInfo] = {}
    prices: list[PriceInfo] = []
    for path in sorted(CATALOG_FIXTURES.glob("tools_*.yaml")):
        for row in yaml.safe_load(path.read_text())["tools"]:
            tools[row["slug"]] = ToolInfo(
                slug=row["slug"],
                name=row["name"],
                kind=row["kind"],
                hardware={item["hardware"]: item.get("level", "native") for item in row.get("hardware") or []},
                quant_formats=frozenset(item["quant_format"] for item in row.get("quant_formats") or []),
                hardware_sources={item["hardware"]: item["source"] for item in row.get("hardware") or []
                                  if item.get("source")},
                quant_format_sources={item["quant_format"]: item["source"]
                                      for item in row.get("quant_formats") or [] if item.get("source")},
                caveats=tuple(
                    CaveatInfo(item["title"], item["body"], item.get("severity", "warning"), item["source"])
                    for item in row.get("caveats") or []
                ),
                documented_checks={
                    check: DocumentedCheck.parse(check, value, source_key=surface["source"],
                                                 surface=surface["api_surface"])
                    for surface in row.get("api_surfaces") or [] if surface["api_surface"] == "openai-chat"
                    for check, value in (surface.get("checks") or {}).items()
                },
            )
            for price in row.get("prices") or []:
                if price.get("unit") == "per_mtok" and price.get("tier", "on_demand") == "on_demand":
                    prices.append(PriceInfo(
                        tool=row["slug"], model=model_slug(price["item"]),
                        input_usd_per_mtok=float(price["input_usd_per_mtok"]),
                        output_usd_per_mtok=float(price["output_usd_per_mtok"]),
                        source_key=price["source"],
                    ))
    return CatalogData(tools=tools, prices=tuple(prices))


@pytest.fixture(scope="session")
def catalog() -> CatalogData:
    return catalog_from_fixtures()
