"""URL reversing with a memo, for pages and API lists that link every row.

Django's reverse() walks the URL resolver's candidates for a name on every call: tens of microseconds,
which a catalog page with a few links per tool, or an API list with a URL per row, pays hundreds of
times per render. The result depends only on the URLconf, the script prefix, the active language,
the current app and the arguments, so it is memoised on exactly those. Only str and int arguments are
memoised (an object argument is reversed through its str(), which may change while its hash does not).
"""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import translation
from django.utils.safestring import SafeString
from rest_framework.reverse import preserve_builtin_query_params
from rest_framework.reverse import reverse as api_reverse

MEMO_SIZE = 4096
# Exact types: a subclass (an enum, a bool) may turn into other text than its value's.
_MEMOISABLE = frozenset({str, SafeString, int})


@functools.lru_cache(maxsize=MEMO_SIZE)
def _memoised_reverse(
    urlconf: Any, prefix: str, language: str | None, viewname: str, args: tuple, kwargs: tuple, current_app: str | None
) -> str:
    return reverse(viewname, args=args or None, kwargs=dict(kwargs) or None, current_app=current_app)


def cached_reverse(
    viewname: str,
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    current_app: str | None = None,
) -> str:
    """django.urls.reverse(), memoised; raises NoReverseMatch as reverse() does."""
    kwargs = kwargs or {}
    if not (
        type(viewname) in _MEMOISABLE
        and all(type(value) in _MEMOISABLE for value in args)
        and all(type(value) in _MEMOISABLE for value in kwargs.values())
    ):
        return reverse(viewname, args=args or None, kwargs=kwargs or None, current_app=current_app)
    return _memoised_reverse(
        get_urlconf(), get_script_prefix(), translation.get_language(), viewname, tuple(args),
        tuple(sorted(kwargs.items())), current_app,
    )


def cached_absolute_reverse(viewname: str, *, kwargs: Mapping[str, Any], request: Any) -> str:
    """rest_framework.reverse.reverse() (an absolute URL, the format override kept), its path memoised."""
    if request is None or getattr(request, "versioning_scheme", None) is not None:
        return api_reverse(viewname, kwargs=kwargs, request=request)
    path = cached_reverse(viewname, kwargs=kwargs)
    return preserve_builtin_query_params(request.build_absolute_uri(path), request)


@receiver(setting_changed)
def _forget_on_urlconf_change(*, setting: str, **_: Any) -> None:
    # Tests swap URLconfs and script prefixes; Django clears its own resolver caches then, and so do we.
    if setting in ("ROOT_URLCONF", "FORCE_SCRIPT_NAME", "LANGUAGE_CODE"):
        _memoised_reverse.cache_clear()
