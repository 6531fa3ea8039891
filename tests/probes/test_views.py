import datetime as dt
import html
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from celery.schedules import crontab
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import Tool
from probe_client.compat import CHECKS
from probes.selectors.tool_measurements import tool_measurements
from scoring.vocabulary import COMPAT_CHECKS
from tests import factories
from tests.probes.dashboard_data import (
    OUTCOMES,
    TEST_KEY_ENV,
    make_compat,
    make_measured_target,
    make_price,
    make_tool,
)

pytestmark = pytest.mark.django_db

SECRET_VALUE = "sk-test-value-that-must-never-render"


@pytest.fixture(autouse=True)
def key_in_environment(monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, SECRET_VALUE)


@pytest.fixture
def providers(now):
    groq = make_tool(slug="groq", name="Groq")
    cerebras = make_tool(slug="cerebras", name="Cerebras")
    make_price(tool=groq, item="gpt-oss-120b", input_usd="0.15", output_usd="0.75")
    groq_target = make_measured_target(
        now=now, slug="groq-gpt-oss-120b", name="Groq · gpt-oss-120b", tool=groq,
        ttft=187.4, ttfat=412.6, speed=463.25, e2e=1234.5, model_id="openai/gpt-oss-120b", region="eu-west-1",
    )
    cerebras_target = make_measured_target(
        now=now, slug="cerebras-gpt-oss-120b", name="Cerebras · gpt-oss-120b", tool=cerebras,
        ttft=95.0, speed=2950.0, e2e=480.0, age=dt.timedelta(hours=40),
    )
    checks = list(COMPAT_CHECKS)
    make_compat(target=groq_target, check_name=checks[0], outcome=OUTCOMES.SUPPORTED, detail="two choices came back")
    make_compat(target=groq_target, check_name=checks[1], outcome=OUTCOMES.ACCEPTED)
    make_compat(target=groq_target, check_name=checks[2], outcome=OUTCOMES.IGNORED, detail="no logprobs in the reply")
    make_compat(
        target=cerebras_target, check_name=checks[0], outcome=OUTCOMES.REJECTED, http_status=400,
        message="'logit_bias' is not supported with this model",
    )
    make_compat(
        target=cerebras_target, check_name=checks[1], outcome=OUTCOMES.ERROR, http_status=503,
        message="upstream overloaded",
    )
    return groq_target, cerebras_target


def _get(client, name, **params):
    response = client.get(reverse(name), params)
    assert response.status_code == 200
    return response.content.decode()


def test_providers_page_shows_formatted_medians_prices_and_status(client, providers):
    page = _get(client, "probes:providers")

    assert "Groq · gpt-oss-120b" in page
    assert '<data value="187.4">187</data>&nbsp;<span class="unit">ms</span>' in page
    assert '<data value="412.6">413</data>' in page
    assert '<data value="463.25">463.3</data>&nbsp;<span class="unit">tok/s</span>' in page
    assert '<data value="1234.5">1235</data>' in page
    assert "97.5&nbsp;%" in page
    assert "$0.15 / $0.75" in page
    assert "Groq pricing page" in page and "verified 2026-10-19" in page
    assert "no catalog price for this model" in page
    assert "Show p50 / p95 / p99" in page
    assert "ago, from eu-west-1)" in page


def _chart_points(page: str, chart_id: str) -> list[tuple[str, float | None, float]]:
    figure = re.search(rf'<figure[^>]*data-chart-id="{chart_id}".*?</figure>', page, re.S).group(0)
    rows = re.findall(r'<tr data-label="([^"]+)"(?: data-series="[^"]*")? data-x="([^"]*)" data-y="([^"]*)"', figure)
    return [(html.unescape(label), float(x) if x else None, float(y)) for label, x, y in rows]


def test_providers_page_charts_are_tables_the_local_chart_library_draws(client, providers):
    page = _get(client, "probes:providers")

    # Only Groq has a catalog price for its model: Cerebras stays out of the price chart rather than at $0.
    assert _chart_points(page, "speed-price") == [("Groq · gpt-oss-120b", pytest.approx((3 * 0.15 + 0.75) / 4), 463.25)]
    assert sorted(_chart_points(page, "ttft-speed")) == [
        ("Cerebras · gpt-oss-120b", 2950.0, 95.0), ("Groq · gpt-oss-120b", 463.25, 187.4),
    ]
    history = _chart_points(page, "history-output_speed_tps")
    assert {label for label, _, _ in history} == {"Groq · gpt-oss-120b", "Cerebras · gpt-oss-120b"}
    assert "/static/vendor/chartjs/chart.umd.min.js" in page
    assert "/static/js/charts.js" in page
    assert "probe-charts.js" not in page
    assert "data-chart-canvas hidden" in page


def test_stale_figure_is_marked_with_its_age(client, providers):
    page = _get(client, "probes:providers")
    row = re.search(r'<tr data-target="cerebras-gpt-oss-120b".*?</tr>', page, re.S).group(0)
    assert "data-stale" in row and "Stale: 1\xa0day, 16\xa0hours old" in row
    fresh = re.search(r'<tr data-target="groq-gpt-oss-120b".*?</tr>', page, re.S).group(0)
    assert "data-stale" not in fresh


def test_compat_matrix_shows_every_outcome_with_status_and_message(client, providers):
    page = _get(client, "probes:providers")
    matrix = re.search(r'<section id="compat".*?</section>', page, re.S).group(0)

    for label in ("✓</span> Supported", "○</span> Accepted", "⚠</span> Ignored", "✗</span> Rejected", "!</span> Error"):
        assert label in matrix
    assert "HTTP 400" in matrix
    assert "&#x27;logit_bias&#x27; is not supported with this model" in matrix
    assert "HTTP 503" in matrix and "upstream overloaded" in matrix
    assert "no logprobs in the reply" in matrix
    assert 'title="' in matrix and "<details>" in matrix
    assert "Not checked" in matrix


def test_without_targets_the_pages_say_so_and_point_operators_to_the_methodology(client):
    providers_page = _get(client, "probes:providers")
    engines_page = _get(client, "probes:engines")
    methodology_page = _get(client, "probes:methodology")

    for page in (providers_page, engines_page):
        assert "has a\n    probe run on this site yet" in page
        assert 'href="/methodology/#operators"' in page
        assert "python manage.py probe --target" not in page
        assert "data-chart-id=\"history-" not in page
    assert "No compatibility run has completed" in providers_page
    assert "python manage.py probe --target" in methodology_page
    assert "make engine" in methodology_page



def test_methodology_points_operators_to_the_docs_instead_of_printing_a_runbook(client):
    groq = make_tool(slug="groq", name="Groq")
    factories.ProbeTargetFactory(slug="groq-template", name="Groq template", tool=groq, enabled=False,
                                 api_key_env="GROQ_API_KEY")

    page = _get(client, "probes:methodology")

    assert "docs/probes-operations.md" in page
    assert "/admin/" not in page and "probes.tasks." not in page and "GROQ_API_KEY" not in page


def test_not_configured_target_is_shown_distinctly_without_any_key_value(client, providers, monkeypatch):
    monkeypatch.setenv("ATLAS_TEST_SET_API_KEY", SECRET_VALUE)
    monkeypatch.delenv("ATLAS_MISSING_API_KEY", raising=False)
    factories.ProbeTargetFactory(
        slug="fireworks-oss", name="Fireworks · gpt-oss-120b", tool=make_tool(slug="fireworks", name="Fireworks AI"),
        api_key_env="ATLAS_MISSING_API_KEY",
    )

    page = _get(client, "probes:providers")

    assert "Enabled but not configured" in page
    assert 'data-not-configured="fireworks-oss"' in page
    row = re.search(r'<tr data-target="fireworks-oss".*?</tr>', page, re.S).group(0)
    assert "Not configured" in row and "<code>ATLAS_MISSING_API_KEY</code>" in row
    assert SECRET_VALUE not in page


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"workload": "in-1m"}, "Unknown workload"),
        ({"concurrency": "abc"}, "Invalid concurrency"),
        ({"concurrency": "99999999999999999999"}, "Invalid concurrency"),
        ({"concurrency": "²"}, "Invalid concurrency"),
        ({"workload": "in-1k\x00"}, "Unknown workload"),
        ({"workload": "<script>alert(1)</script>", "concurrency": "-3"}, "Unknown workload"),
    ],
)
def test_bad_query_values_are_ignored_with_a_notice(client, providers, params, field):
    page = _get(client, "probes:providers", **params)
    assert field in page
    assert "<script>alert(1)</script>" not in page
    assert '<data value="187.4">' in page


def test_bad_query_values_without_data_never_fail(client):
    page = _get(client, "probes:engines", workload="x", concurrency="y")
    assert "choices were ignored" in page


def test_workload_selector_links_work_without_javascript(client, providers, now):
    groq_target = providers[0]
    factories.MeasurementSummaryFactory(
        target=groq_target, workload="in-1k", concurrency=10, last_run_at=now,
        metrics={"ttft_ms": {"median_72h": 777.0}},
    )

    page = _get(client, "probes:providers", workload="in-1k", concurrency="10")

    assert '<data value="777">777</data>' in page
    assert 'href="?workload=in-1k&amp;concurrency=10" aria-current="page"' in page
    assert 'href="?workload=in-1k&amp;concurrency=1"' in page


def test_engines_page_shows_hardware_quantization_and_version_beside_figures(client, now):
    engine = make_tool(slug="llama-cpp", name="llama.cpp", kind=Tool.Kind.ENGINE)
    make_measured_target(
        now=now, slug="local-llama", name="Local llama.cpp", tool=engine, ttft=12.0, speed=85.5, e2e=3100,
        hardware="x86 CPU, 2 cores", quantization="Q8_0", engine_version="llama-cpp-python 0.3.36", api_key_env="",
    )

    page = _get(client, "probes:engines")

    row = re.search(r'<tr data-target="local-llama".*?</tr>', page, re.S).group(0)
    for text in ("x86 CPU, 2 cores", "Q8_0", "llama-cpp-python 0.3.36", '<data value="85.5">85.5</data>'):
        assert text in row
    assert "comparable only between" in page
    assert "chart-speed-price" not in page


def test_methodology_page_states_definitions_schedule_and_freshness(client, providers, settings):
    settings.PROBE_CRON_SCHEDULES = {"probe-speed": "7 */3 * * *"}
    settings.CELERY_BEAT_SCHEDULE = {
        "probe-speed": {"task": "probes.tasks.speed_task", "schedule": crontab.from_string("7 */3 * * *")},
    }
    page = _get(client, "probes:methodology")

    for term in ("Time to first token (TTFT)", "Time to first answer token", "Time to response headers",
                 "End-to-end latency", "Output speed", "Time per output token", "Inter-token latency",
                 "Buffered streams", "Token counts", "What is not measured", "72 hours"):
        assert term in page
    assert "probe-speed" in page and "At 7 minutes past the hour, every 3 hours" in page
    assert "https://artificialanalysis.ai/methodology/performance-benchmarking" in page
    freshness = re.search(r"<table class=\"freshness-table\" data-freshness>.*?</table>", page, re.S).group(0)
    assert "Groq · gpt-oss-120b" in freshness and "Cerebras · gpt-oss-120b" in freshness
    assert "data-stale" in freshness
    checks_table = re.search(r"<table class=\"freshness-table\" data-checks>.*?</table>", page, re.S).group(0)
    for check in CHECKS.values():
        assert f"<code>{check.name}</code>" in checks_table
        assert html.escape(check.supported_when) in checks_table


def test_methodology_without_schedule_or_data_says_so(client, settings):
    settings.CELERY_BEAT_SCHEDULE = {}
    page = _get(client, "probes:methodology")
    assert "No probe is scheduled in this deployment" in page
    assert "No speed figure has been measured yet" in page


def _build_targets(now, indexes):
    groq = make_tool(slug="groq", name="Groq")
    engine = make_tool(slug="vllm", name="vLLM", kind=Tool.Kind.ENGINE)
    for index in indexes:
        for owner in (groq, engine):
            target = make_measured_target(
                now=now, slug=f"{owner.slug}-{index}", name=f"{owner.name} {index}", tool=owner,
                ttft=100.0 + index, speed=300.0, e2e=1000.0, hardware=f"GPU {index % 3}",
            )
            for check in list(COMPAT_CHECKS)[:4]:
                make_compat(target=target, check_name=check, outcome=OUTCOMES.SUPPORTED)


def _queries_for(client, name):
    with CaptureQueriesContext(connection) as context:
        response = client.get(reverse(name))
    assert response.status_code == 200
    return len(context.captured_queries), response.content.decode().count("<tr data-target=")


def test_page_query_counts_do_not_grow_with_targets(client, now):
    pages = ("probes:providers", "probes:engines", "probes:methodology")
    make_price(tool=make_tool(slug="groq", name="Groq"), item="gpt-oss-120b", input_usd="0.15", output_usd="0.75")
    _build_targets(now, range(2))
    few = {name: _queries_for(client, name) for name in pages}
    _build_targets(now, range(2, 20))
    many = {name: _queries_for(client, name) for name in pages}

    assert {name: queries for name, (queries, _rows) in few.items()} == {
        name: queries for name, (queries, _rows) in many.items()
    }
    assert many["probes:providers"][1] > few["probes:providers"][1]
    assert many["probes:engines"][1] > few["probes:engines"][1]


def test_tool_partial_renders_with_the_documented_context_name(now):
    groq = make_tool(slug="groq", name="Groq")
    target = make_measured_target(now=now, slug="g", name="Groq target", tool=groq, ttft=150, speed=500.0, e2e=700)
    make_compat(target=target, check_name="n", outcome=OUTCOMES.REJECTED, http_status=400, message="n must be 1")

    rendered = render_to_string(
        "probes/_tool_measurements.html", {"tool_measurements": tool_measurements(tool=groq)}
    )

    assert "Groq target" in rendered
    assert '<data value="150">150</data>' in rendered
    assert "n must be 1" in rendered and "(HTTP 400)" in rendered
    assert reverse("probes:providers") in rendered

    empty = render_to_string(
        "probes/_tool_measurements.html",
        {"tool_measurements": tool_measurements(tool=make_tool(slug="tgi", name="TGI", kind="engine"))},
    )
    assert "Nothing about this tool has been measured" in empty and "make engine" in empty


@pytest.mark.engine
def test_a_real_engine_probe_appears_on_the_engines_page(client, llama_server):
    """End to end: a real llama.cpp server probed by the real services, then read back by the page."""
    from probes.models import CompatStatus, MeasurementSummary
    from probes.services.runs.execute import probe_target_run_now

    engine = make_tool(slug="llama-cpp", name="llama.cpp", kind=Tool.Kind.ENGINE)
    target = factories.ProbeTargetFactory(
        slug="llama-cpp-test", name="llama.cpp (test server)", tool=engine, base_url=llama_server.base_url,
        model_id=llama_server.model, api_key_env="", hardware="test machine CPU", quantization="F32",
    )
    probe_target_run_now(target=target, workloads=["in-100"], requests=2, max_tokens=16)
    summary = MeasurementSummary.objects.get(target=target, workload="in-100", concurrency=1)
    statuses = CompatStatus.objects.filter(target=target)
    assert summary.samples > 0 and statuses.exists()

    page = _get(client, "probes:engines")

    row = re.search(r'<tr data-target="llama-cpp-test".*?</tr>', page, re.S).group(0)
    ttft = summary.metrics["ttft_ms"]["median_72h"]
    rounded = Decimal(str(ttft)).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    assert f'<data value="{ttft:.15g}">{rounded}</data>' in row
    assert "test machine CPU" in row and "Measured" in row
    matrix = re.search(r'<section id="compat".*?</section>', page, re.S).group(0)
    for status in statuses:
        assert f'data-check="{status.check_name}" data-target="llama-cpp-test"' in matrix
        assert status.get_outcome_display() in matrix


def test_a_long_html_error_page_from_a_proxy_is_escaped_and_cut(client, providers):
    proxy_page = "<html><body><h1>502 Bad Gateway</h1>" + "padding " * 1000 + "</body></html>"
    make_compat(target=providers[0], check_name="seed", outcome=OUTCOMES.ERROR, http_status=502, message=proxy_page)

    page = _get(client, "probes:providers")

    cell = re.search(r'<td class="compat compat--error"[^>]*data-check="seed".*?</td>', page, re.S).group(0)
    assert "&lt;html&gt;&lt;body&gt;&lt;h1&gt;502 Bad Gateway" in cell
    assert "<h1>502" not in page
    assert "…" in cell and cell.count("padding") < 120


@pytest.mark.parametrize("name", ["probes:providers", "probes:engines", "probes:methodology"])
def test_pages_only_answer_safe_methods(client, name):
    assert client.head(reverse(name)).status_code == 200
    assert client.post(reverse(name)).status_code == 405


def test_methodology_quotes_the_client_buffered_stream_threshold(client):
    from probe_client import stream_analysis

    page = _get(client, "probes:methodology")

    assert f"{stream_analysis.BUFFERED_SHARE * 100:.0f}&nbsp;% or more of them arrived in the same network read" in page


def test_methodology_says_what_a_published_comparison_joins_its_load_modes_and_its_ranking_figure(client):
    page = html.unescape(_get(client, "probes:methodology"))
    section = page[page.index('id="published-benchmarks"'):]
    section = " ".join(section[:section.index("</section>")].split())
    for words in ("N prompts at once", "Offline batch", "N concurrent", "R req/s",
                  "A chart line joins only the loads of one series' own sweep, in one mode",
                  "not across modes, datasets, prompt counts", "total token throughput",
                  "single-engine evidence", "observed_on", "DP attention"):
        assert words in section, words
