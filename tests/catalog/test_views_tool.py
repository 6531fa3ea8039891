import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.catalog.test_selectors import _grow_catalog
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


def test_tool_page_shows_rating_with_source_prices_and_sources(client, catalog):
    response = client.get(reverse("catalog:tool_detail", args=["groq"]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Groq</h1>" in html
    assert "4.0/5" in html and "Rating from" in html and "Inference engines comparison (seed 002)" in html
    for expected in ("gpt-oss-120b", "gpt-oss-20b", "Whisper large-v3-turbo", "$0.15", "$0.60", "$0.075", "$0.30", "$0.04"):
        assert expected in html
    assert "USD per hour of audio" in html
    assert "Rejects logprobs and logit_bias." in html and "Groq docs: OpenAI compatibility" in html
    assert "Groq LPU" in html and "Runs on (hosted)" in html
    assert '<time datetime="2026-10-19">19 October 2026</time>' in html
    assert 'id="sources"' in html
    assert "<title>Groq: rating, prices, hardware and caveats · Inference Atlas</title>" in html
    assert 'id="measurements"' in html


def test_caveats_are_shown_before_the_price_table(client, catalog):
    html = client.get(reverse("catalog:tool_detail", args=["llama-cpp"])).content.decode()
    assert "caveat-security" in html
    assert "The RPC backend is an insecure proof of concept" in html
    assert html.index("Before you use it") < html.index('id="prices-heading"')
    assert "No prices are recorded for llama.cpp." in html
    assert "GGUF" in html


def test_unrated_tool_says_no_source_rates_it(client, catalog):
    html = client.get(reverse("catalog:tool_detail", args=["tgi"])).content.decode()
    assert "Not rated by any source." in html
    assert "/5" not in html.split('id="main"')[1].split("</main>")[0]


def test_unknown_tool_gets_the_project_404_page(client, catalog):
    response = client.get("/tools/not-a-tool/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html and "/tools/not-a-tool/" in html
    assert "Browse the catalog" in html
    assert "Traceback" not in html


@pytest.mark.parametrize("count", [5, 50])
def test_tool_page_query_count_is_constant(client, django_assert_num_queries, count):
    _grow_catalog(count)
    # the tool, 10 prefetches (with its models, reported figures and documented absences), 3 for its
    # measured targets, 1 for the use cases naming it
    with django_assert_num_queries(15):
        response = client.get(reverse("catalog:tool_detail", args=["grown-1"]))
    assert response.status_code == 200


@pytest.mark.parametrize("use_cases", [1, 8])
def test_tool_page_lists_the_use_cases_naming_it_with_constant_queries(client, django_assert_num_queries,
                                                                      use_cases):
    from tests.factories import UseCaseFactory, UseCaseRecommendationFactory

    _grow_catalog(5)
    tool = ToolFactory(slug="grown-1")
    for index in range(use_cases):
        UseCaseRecommendationFactory(use_case=UseCaseFactory(slug=f"case-{index}", title=f"Case {index}"),
                                     tool=tool, reason=f"Reason {index}.", is_recommended=index > 0)
    with django_assert_num_queries(15):
        html = client.get(reverse("catalog:tool_detail", args=["grown-1"])).content.decode()
    section = html.split('id="use-cases-heading"')[1].split("</section>")[0]
    assert f'href="/use-cases/case-{use_cases - 1}/"' in section and f"Reason {use_cases - 1}." in section
    assert section.count("listed by a source, not recommended here") == 1


def test_tool_with_nothing_recorded_renders_empty_states(client):
    ToolFactory(slug="bare", name="Bare", licence=None, verdict="", ideal_for="", last_verified=None)
    html = client.get(reverse("catalog:tool_detail", args=["bare"])).content.decode()
    for empty in ("No prices are recorded", "No hardware support is recorded", "No quantization formats",
                  "No API surfaces", "No features are recorded", "No sources are recorded", "Not recorded",
                  "No use case or hardware recipe in the guides names Bare",
                  "The catalog does not record which models"):
        assert empty in html


@pytest.mark.parametrize("targets", [1, 6])
def test_tool_page_shows_measured_targets_with_constant_queries(client, django_assert_num_queries, targets):
    from tests.factories import MeasurementSummaryFactory, ProbeTargetFactory

    _grow_catalog(5)
    tool = ToolFactory(slug="grown-1")
    for index in range(targets):
        target = ProbeTargetFactory(slug=f"measured-{index}", name=f"Measured target {index}", tool=tool)
        MeasurementSummaryFactory(target=target, workload="in-100")
    with django_assert_num_queries(15):
        html = client.get(reverse("catalog:tool_detail", args=["grown-1"])).content.decode()
    assert f"Measured target {targets - 1}" in html
    assert "121" in html  # the 72-hour median TTFT of the summary, in ms


def test_a_provider_price_links_its_own_page_with_its_date_and_others_are_labelled_secondary(client):
    call_command("load_catalog", verbosity=0)
    html = client.get(reverse("catalog:tool_detail", args=["fireworks-ai"])).content.decode()
    rows = {re.search(r'<th scope="row" data-label="Item">(.*?)</th>', row).group(1): row
            for row in re.findall(r"<tr>\s*<th scope=\"row\" data-label=\"Item\">.*?</tr>", html, re.S)}
    own = rows["GPT OSS 120B"]
    assert 'href="https://fireworks.ai/models/fireworks/gpt-oss-120b"' in own and 'datetime="2026-12-01"' in own
    assert "data-secondary-price" not in own
    assert all("data-secondary-price" in row for item, row in rows.items() if item != "GPT OSS 120B")
    engine = client.get(reverse("catalog:tool_detail", args=["vllm"])).content.decode()
    assert "data-secondary-price" not in engine


@pytest.mark.parametrize("models", [1, 6])
def test_tool_page_figures_per_model_with_constant_queries(client, django_assert_num_queries, models):
    from tests.factories import LanguageModelFactory, ModelOfferingFactory, ReportedFigureFactory

    tool = ToolFactory(slug="served", name="Served", kind="provider")
    for index in range(models):
        model = LanguageModelFactory(slug=f"served-model-{index}", name=f"Served model {index}")
        ModelOfferingFactory(tool=tool, model=model)
        ReportedFigureFactory(tool=tool, model=model, publisher="Artificial Analysis", value=100 + index)
    # the tool, 10 prefetches, 3 for its measured targets, 1 for the use cases naming it, 6 for the
    # comparisons of its models (models, offerings, prices, reported figures, documented checks, probe targets;
    # without targets there are no summaries or compat cells to read)
    with django_assert_num_queries(21):
        html = client.get(reverse("catalog:tool_detail", args=["served"])).content.decode()
    figures = html.split("data-tool-figures>")[1].split("</table>")[0]
    assert figures.count("<tr data-model=") == models
    assert f'<data value="{100 + models - 1}">' in figures and "Artificial Analysis" in figures
