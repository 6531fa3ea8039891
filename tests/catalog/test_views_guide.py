import re

import pytest
from django.urls import reverse

from tests.catalog.pages_data import build_sample_catalog

pytestmark = pytest.mark.django_db


def test_guide_lists_eight_questions_with_links(client):
    build_sample_catalog()
    response = client.get(reverse("catalog:guide"))
    assert response.status_code == 200
    html = response.content.decode()
    questions = re.findall(r"<li id=\"[a-z-]+\">\s*<h2>(.*?)</h2>", html)
    assert len(questions) == 8
    guide = html.split('<ol class="guide">')[1].split("</ol>")[0]
    for item in guide.split("</li>\n  <li id=")[:8]:
        assert 'class="guide-links"' in item and "<a href=" in item
    assert "/compare/?tools=groq,cerebras,together-ai,fireworks-ai" in html
    for page in ("/providers/", "/fit/", "/break-even/", "/recommend/", "/?hardware=apple-silicon"):
        assert f'href="{page}"' in html
    assert "Inference engines comparison (seed 002)" in html


def test_guide_links_answer_with_the_real_catalog(client):
    """Every catalog, compare and tool link of the guide works against the loaded fixtures."""
    from django.core.management import call_command

    call_command("load_catalog", verbosity=0)
    html = client.get(reverse("catalog:guide")).content.decode()
    guide = html.split('<ol class="guide">')[1].split("</ol>")[0]
    links = {link.replace("&amp;", "&") for link in re.findall(r'href="([^"]+)"', guide)}
    own = sorted(link for link in links if link.startswith(("/?", "/compare/", "/tools/")))
    assert len(own) >= 10
    for link in own:
        response = client.get(link)
        assert response.status_code == 200, link
        page = response.content.decode()
        assert "Some filters were ignored" not in page, link
        assert "cannot be compared" not in page, link
        if link.startswith("/?"):
            assert len(response.context["tools"]) >= 2, link
