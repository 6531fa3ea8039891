"""Query-string forms of the catalog pages. Invalid values are dropped and reported, never fatal."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict

from catalog.models import Change, Feature, HardwareTarget, LanguageModel, Licence, Tool
from catalog.selectors import TOOL_SORTS

_OPEN_SOURCE_VALUES = {"yes": True, "no": False}


@dataclass(frozen=True)
class IgnoredParameter:
    name: str
    value: str
    reason: str


def _invalid(what: str) -> dict[str, str]:
    return {"invalid_choice": f"%(value)s is not a known {what}."}


class CatalogFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=100, label="Search", strip=True)
    kind = forms.ChoiceField(required=False, label="Kind", error_messages=_invalid("kind of tool"))
    hardware = forms.ChoiceField(required=False, label="Hardware", error_messages=_invalid("hardware target"))
    licence = forms.ChoiceField(required=False, label="Licence", error_messages=_invalid("licence"))
    feature = forms.ChoiceField(required=False, label="Feature", error_messages=_invalid("feature"))
    open_source = forms.TypedChoiceField(
        required=False,
        label="Open source",
        choices=[("", "Any"), ("yes", "Open source only"), ("no", "Not open source")],
        coerce=_OPEN_SOURCE_VALUES.__getitem__,
        empty_value=None,
        error_messages={"invalid_choice": "%(value)s is not one of: yes, no."},
    )
    sort = forms.ChoiceField(
        required=False,
        label="Sort by",
        choices=[("rating", "Rating"), ("name", "Name"), ("price", "Price of gpt-oss-120b")],
        error_messages={"invalid_choice": f"%(value)s is not one of: {', '.join(TOOL_SORTS)}."},
    )

    def __init__(self, data: QueryDict, *args: Any, **kwargs: Any) -> None:
        super().__init__(data, *args, **kwargs)
        self.fields["kind"].choices = [("", "Any kind"), *Tool.Kind.choices]
        self.fields["hardware"].choices = [("", "Any hardware"), *HardwareTarget.objects.values_list("slug", "name")]
        self.fields["licence"].choices = [("", "Any licence"), *Licence.objects.values_list("spdx_id", "spdx_id")]
        self.fields["feature"].choices = [("", "Any feature"), *Feature.objects.values_list("slug", "name")]

    def filters(self) -> dict[str, Any]:
        """The valid values, ready for catalog.selectors.tool_list; invalid fields are left out."""
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value not in ("", None)}

    def ignored(self) -> list[IgnoredParameter]:
        self.is_valid()
        return [
            IgnoredParameter(name=name, value=self.data.get(name, ""), reason=" ".join(errors))
            for name, errors in self.errors.items()
        ]

    def is_filtered(self) -> bool:
        return any(name != "sort" for name in self.filters())


class ChangeFilterForm(forms.Form):
    """The filters of /changes/ and its feed: invalid values are dropped and reported, like the catalog's."""

    kind = forms.ChoiceField(required=False, label="Kind", error_messages=_invalid("kind of change"))
    tool = forms.ChoiceField(required=False, label="Engine or provider", error_messages=_invalid("tool"))
    model = forms.ChoiceField(required=False, label="Model", error_messages=_invalid("model"))
    hardware = forms.ChoiceField(required=False, label="Hardware", error_messages=_invalid("hardware target"))

    def __init__(self, data: QueryDict, *args: Any, **kwargs: Any) -> None:
        super().__init__(data, *args, **kwargs)
        self.fields["kind"].choices = [("", "Any kind"), *Change.Kind.choices]
        self.fields["tool"].choices = [
            ("", "Any tool"),
            *((slug, f"{name} ({Tool.Kind(kind).label.lower()})")
              for slug, name, kind in Tool.objects.order_by("name").values_list("slug", "name", "kind")),
        ]
        self.fields["model"].choices = [("", "Any model"), *LanguageModel.objects.values_list("slug", "name")]
        self.fields["hardware"].choices = [("", "Any hardware"), *HardwareTarget.objects.values_list("slug", "name")]

    def filters(self) -> dict[str, Any]:
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value}

    def ignored(self) -> list[IgnoredParameter]:
        self.is_valid()
        return [
            IgnoredParameter(name=name, value=self.data.get(name, ""), reason=" ".join(errors))
            for name, errors in self.errors.items()
        ]
