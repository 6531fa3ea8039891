from decimal import Decimal

import pytest

from catalog.models import Tool
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


def test_ranked_orders_rated_tools_by_rating_then_unrated_by_name():
    ToolFactory(slug="b-unrated", name="B unrated", rating=None)
    ToolFactory(slug="low", name="Low", rating=Decimal("4.0"), rank=2)
    ToolFactory(slug="high", name="High", rating=Decimal("4.8"), rank=1)
    ToolFactory(slug="a-unrated", name="A unrated", rating=None)

    assert list(Tool.objects.ranked().values_list("slug", flat=True)) == ["high", "low", "a-unrated", "b-unrated"]
