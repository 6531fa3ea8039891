import datetime
from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model

from core.models import AuditEntry
from core.services import audit_record, audit_value, model_update
from tests.factories import LicenceFactory, SourceFactory, ToolFactory

pytestmark = pytest.mark.django_db


def test_model_update_sets_only_given_changed_fields_and_reports_old_and_new():
    tool = ToolFactory(name="vLLM", rating=Decimal("4.6"), last_verified=datetime.date(2026, 10, 19))
    changes = model_update(
        instance=tool, fields=("name", "rating", "last_verified"), data={"name": "vLLM", "rating": Decimal("4.7")}
    )
    assert changes == {"rating": {"old": "4.6", "new": "4.7"}}
    assert tool.rating == Decimal("4.7")
    assert tool.last_verified == datetime.date(2026, 10, 19)


def test_audit_values_name_relations_by_their_natural_key():
    assert audit_value(LicenceFactory(spdx_id="MIT")) == "MIT"
    assert audit_value([SourceFactory(key="b"), SourceFactory(key="a")]) == ["a", "b"]
    assert audit_value(datetime.date(2026, 1, 2)) == "2026-01-02"


def test_audit_record_keeps_the_username_after_the_account_is_gone():
    user = get_user_model().objects.create_user("editor", is_staff=True)
    tool = ToolFactory(slug="vllm")
    entry = audit_record(actor=user, action=AuditEntry.Action.UPDATE, instance=tool,
                         changes={"name": {"old": "a", "new": "b"}})
    user.delete()
    entry.refresh_from_db()
    assert (entry.user, entry.username, entry.object_type, entry.object_id) == (None, "editor", "catalog.tool",
                                                                                 str(tool.pk))


def test_audit_trail_is_read_only_in_the_admin(rf):
    model_admin = admin.site._registry[AuditEntry]
    request = rf.get("/admin/")
    request.user = get_user_model()(is_staff=True, is_superuser=True)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
