import datetime
from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from core.models import AuditEntry
from catalog.models import Source
from core.services import audit_record, audit_value, audited_create, audited_update, model_update
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


def test_audited_create_validates_before_saving_and_records_fields_and_relations():
    with pytest.raises(ValidationError):
        audited_create(actor=None, instance=Source(key="not a slug", title="T"), fields=("key", "title"))
    assert not Source.objects.filter(key="not a slug").exists()
    assert not AuditEntry.objects.exists()

    tool = ToolFactory.build(slug="new-engine", licence=LicenceFactory())
    audited_create(actor=None, instance=tool, fields=("slug",), many_to_many={"sources": [SourceFactory(key="b")]})
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.object_id) == (AuditEntry.Action.CREATE, str(tool.pk))
    assert entry.changes == {"slug": {"old": None, "new": "new-engine"}, "sources": {"old": None, "new": ["b"]}}


def test_audited_update_records_only_what_changed_including_relations():
    tool = ToolFactory(name="vLLM")
    tool.sources.set([SourceFactory(key="a")])
    audited_update(actor=None, instance=tool, fields=("name",), data={"name": "vLLM", "sources": [Source.objects.get()]},
                   many_to_many_fields=("sources",))
    assert not AuditEntry.objects.exists()

    audited_update(actor=None, instance=tool, fields=("name",), data={"sources": [SourceFactory(key="b")]},
                   many_to_many_fields=("sources",))
    entry = AuditEntry.objects.get()
    assert entry.changes == {"sources": {"old": ["a"], "new": ["b"]}}
    assert list(tool.sources.values_list("key", flat=True)) == ["b"]


def test_audit_trail_is_read_only_in_the_admin(rf):
    model_admin = admin.site._registry[AuditEntry]
    request = rf.get("/admin/")
    request.user = get_user_model()(is_staff=True, is_superuser=True)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


@pytest.mark.django_db
def test_an_update_writes_only_the_fields_it_changed():
    from catalog.models import Tool
    from core.services import audited_update
    from tests.factories import ToolFactory

    ToolFactory(slug="racy", verdict="first verdict", ideal_for="first ideal")
    stale = Tool.objects.get(slug="racy")
    Tool.objects.filter(slug="racy").update(ideal_for="edited meanwhile in the admin")

    audited_update(actor=None, instance=stale, fields=("verdict", "ideal_for"), data={"verdict": "new verdict"})

    saved = Tool.objects.get(slug="racy")
    assert (saved.verdict, saved.ideal_for) == ("new verdict", "edited meanwhile in the admin")
