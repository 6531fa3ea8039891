"""No dead ends: every link a page renders answers 200, from the home page and from a set of answers (the wizard,
the fit calculator, break-even, comparisons), on a freshly loaded catalog; and no page cites a source by a number
a reader cannot look up ("seed 002")."""
import re
from collections import deque
from html import unescape
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

STARTS = (
    "/",
    "/recommend/?hardware=nvidia_hopper_node&deployment=production&concurrency=64",
    "/recommend/?hardware=rtx_single&deployment=local",
    "/recommend/?hardware=mac&deployment=local",
    "/recommend/?hardware=amd_instinct&deployment=production",
    "/recommend/?hardware=cpu_server&hosted_ok=on&optimize_for=latency&needs=tools&needs=json_schema",
    "/fit/?model=gpt-oss-120b&hardware=nvidia-h100-sxm",
    "/fit/?model=llama-3.3-70b&hardware=nvidia-h100-sxm&devices=8",
    "/break-even/?model=gpt-oss-120b",
    "/compare/?tools=vllm,sglang,tensorrt-llm",
    "/compare/?tools=groq,cerebras,together-ai,fireworks-ai&only=differences",
)
# Left out: the admin (behind login), the API's own HTML docs, file downloads.
NOT_CRAWLED = ("/admin/", "/static/", "/api/v1/docs/", "/api/v1/redoc/", "/api/v1/schema/")
HREF = re.compile(r'href="([^"]+)"')
SEED_NUMBER = re.compile(r"\bseeds? ?0\d\d\b|\bseed (?:documents?|guides?)\b", re.IGNORECASE)


@pytest.fixture
def unthrottled(settings):
    """One client following every link at test speed is not a reader: the rate limits have tests of their own."""
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {scope: "100000/min" for scope in rates}}


def test_every_internal_link_answers_200_and_no_page_says_seed(client, unthrottled):
    call_command("load_catalog", verbosity=0)
    seen, queue, broken, seedy = set(STARTS), deque(STARTS), [], []
    while queue:
        path = queue.popleft()
        response = client.get(path)
        if response.status_code != 200:
            broken.append((path, response.status_code))
            continue
        if "text/html" not in response.get("Content-Type", ""):
            continue
        page = response.content.decode()
        if SEED_NUMBER.search(page):
            seedy.append((path, SEED_NUMBER.search(page).group(0)))
        for href in HREF.findall(page):
            target = urldefrag(urljoin(path, unescape(href)))[0]
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith(NOT_CRAWLED):
                continue
            if target not in seen:
                seen.add(target)
                queue.append(target)
    assert len(seen) > 100
    assert broken == [], broken
    assert seedy == []
