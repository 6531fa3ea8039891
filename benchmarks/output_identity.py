"""Every page, API answer and CSV byte for byte, to compare two versions of the code or the cached paths
of one version with its uncached rendering.

Fetches a broad set of URLs with Django's test client against the database DATABASE_URL names (every
tool page and tool API detail, every model page, catalog filters and sorts, comparisons and their CSV,
the dashboards, the API lists with filters and CSV, the 400 answers):

    # the uncached rendering of this checkout, stored
    .venv/bin/python benchmarks/output_identity.py --save /tmp/outputs-before
    # later, with other code: the uncached rendering and every cached path, each compared with it
    .venv/bin/python benchmarks/output_identity.py --against /tmp/outputs-before

With --against, the URLs are fetched four times: with the read cache off; with it on but emptied (every
row and page computed and stored); after an edit to one tool that no output shows (its `updated_at`,
through QuerySet.update), so every page misses the page cache and is assembled from the rows cached by
the pass before, that tool's rows re-rendered; and once more (pages from the page cache). Each pass
must equal the stored outputs. Exits 1 on any difference, naming the URLs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
# Hundreds of API reads in a few seconds: the rate limiter is not what is compared.
os.environ.update(API_THROTTLE_ANON="100000000/min", API_THROTTLE_USER="100000000/min", DJANGO_LOG_LEVEL="ERROR")


def urls() -> list[str]:
    from catalog.models import Feature, HardwareTarget, LanguageModel, Licence, Tool

    tools = list(Tool.objects.ranked().values_list("slug", "kind"))
    slugs = [slug for slug, _ in tools]
    providers = [slug for slug, kind in tools if kind == "provider"]
    engines = [slug for slug, kind in tools if kind != "provider"]
    hardware = list(HardwareTarget.objects.values_list("slug", flat=True))
    features = list(Feature.objects.values_list("slug", flat=True))
    licences = list(Licence.objects.values_list("spdx_id", flat=True))
    models = list(LanguageModel.objects.values_list("slug", flat=True))
    found = ["/", "/guide/", "/providers/", "/engines/", "/models/", "/compare/", "/compare/?with=vllm"]
    for sort in ("rating", "name", "price"):
        found += [f"/?sort={sort}", f"/?kind=provider&sort={sort}", f"/?open_source=yes&sort={sort}"]
    found += [f"/?hardware={slug}" for slug in hardware[:6]]
    found += [f"/?feature={slug}" for slug in features[:4]]
    found += [f"/?licence={spdx}" for spdx in licences[:4]]
    found += ["/?q=gguf", "/?q=apple", "/?q=provider", "/?open_source=no", "/?kind=engine&hardware=nvidia-cuda",
              "/?q=no-such-tool-anywhere", "/?kind=bogus&sort=nonsense", "/?sort=price&q=gpt"]
    found += [f"/tools/{slug}/" for slug in slugs]
    found += [f"/models/{slug}/" for slug in models]
    groups = [providers[:4], engines[:4], providers[:2], [*providers[:2], *engines[:2]], slugs[-3:]]
    for group in groups:
        if len(group) >= 2:
            joined = ",".join(group)
            found += [f"/compare/?tools={joined}", f"/compare/?tools={joined}&only=differences",
                      f"/compare/csv/?tools={joined}", f"/api/v1/compare/?tools={joined}"]
    found += ["/compare/?tools=vllm", "/compare/?tools=vllm,vllm", "/compare/?tools=vllm,no-such-tool",
              "/compare/csv/?tools=vllm", "/api/v1/compare/?tools=vllm"]
    found += ["/api/v1/tools/", "/api/v1/tools/?format=csv", "/api/v1/tools/?ordering=price",
              "/api/v1/tools/?ordering=name&format=csv", "/api/v1/tools/?kind=provider&ordering=price",
              "/api/v1/tools/?hardware=nvidia-cuda&feature=continuous-batching", "/api/v1/tools/?q=gguf",
              "/api/v1/tools/?open_source=true", "/api/v1/tools/?min_rating=4.5", "/api/v1/tools/?kind=bogus",
              "/api/v1/tools/?hardware=no-such-hardware"]
    found += [f"/api/v1/tools/{slug}/" for slug in slugs]
    found += ["/api/v1/tools/no-such-tool/", "/tools/no-such-tool/"]
    found += ["/api/v1/probes/summaries/", "/api/v1/probes/summaries/?format=csv", "/api/v1/probes/compat/",
              "/api/v1/models/", "/api/v1/prices/", "/api/v1/sources/", "/api/v1/hardware/", "/api/v1/use-cases/"]
    found += [f"/api/v1/models/{slug}/" for slug in models[:5]]
    return found


def fetch_all(paths: list[str]) -> dict[str, bytes]:
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    outputs = {}
    for path in paths:
        response = client.get(path)
        head = f"{response.status_code} {response.get('Content-Type', '')}\n".encode()
        outputs[path] = head + response.content
    return outputs


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def differences(expected: dict[str, str], outputs: dict[str, bytes]) -> list[str]:
    missing = sorted(set(expected) - set(outputs))
    changed = [path for path, body in outputs.items() if path in expected and expected[path] != digest(body)]
    new = sorted(set(outputs) - set(expected))
    return [f"changed: {path}" for path in changed] + [f"not fetched: {path}" for path in missing] + [
        f"not in the stored set: {path}" for path in new
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path, help="store the uncached outputs in this directory")
    mode.add_argument("--against", type=Path, help="compare every pass with the outputs stored in this directory")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db.models.functions import Now

    from catalog.models import Tool
    from core.cache import read_cache_clear

    settings.READ_CACHE_SECONDS = 0
    paths = urls()
    reference = fetch_all(paths)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        for number, path in enumerate(paths):
            (args.save / f"{number:04d}.out").write_bytes(reference[path])
        manifest = {path: {"file": f"{number:04d}.out", "sha256": digest(reference[path])}
                    for number, path in enumerate(paths)}
        (args.save / "manifest.json").write_text(json.dumps(manifest, indent=1))
        print(f"Stored {len(paths)} outputs in {args.save}")
        return 0

    manifest = json.loads((args.against / "manifest.json").read_text())
    expected = {path: entry["sha256"] for path, entry in manifest.items()}
    settings.READ_CACHE_SECONDS = 300
    read_cache_clear()
    passes = {"read cache off": reference, "read cache emptied": fetch_all(paths)}
    edited = Tool.objects.order_by("pk").values_list("slug", flat=True)[1]
    Tool.objects.filter(slug=edited).update(updated_at=Now())
    passes[f"after an edit to {edited} (page cache missed, other rows cached)"] = fetch_all(paths)
    passes["pages cached"] = fetch_all(paths)
    read_cache_clear()
    failed = False
    for name, outputs in passes.items():
        found = differences(expected, outputs)
        print(f"{name}: {len(outputs)} URLs, {len(found)} differences")
        for line in found[:40]:
            print(f"  {line}")
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
