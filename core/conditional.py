"""ETag / Last-Modified on every read, and 304 Not Modified when the client's copy is current.

The ETag is a hash of the representation itself, so it changes exactly when the bytes change,
whatever caused it (an edit, a deletion, a new probe run). Last-Modified is the moment this exact
representation was first served (remembered in the shared cache under its ETag), or, for a cached
read, when it was computed from the current data fingerprint. Either date only ever moves forward on a
cache eviction, which costs a client a full response, never a stale 304.
"""
from __future__ import annotations

import hashlib
import time

from django.core.cache import cache
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.http import http_date

from core.cache import cache_outage

FIRST_SEEN_TTL_SECONDS = 30 * 24 * 3600
CACHE_KEY_PREFIX = "api:etag-first-seen:"


def _first_seen(etag_hash: str) -> int:
    key = CACHE_KEY_PREFIX + etag_hash
    try:
        cache.add(key, int(time.time()), timeout=FIRST_SEEN_TTL_SECONDS)
        seen = cache.get(key)
    except Exception:  # noqa: BLE001 - without the cache the date is now: a client refetches, never a stale 304
        cache_outage.started("conditional GET")
        return int(time.time())
    return int(seen or time.time())


def conditional_get(
    request: HttpRequest, response: HttpResponseBase, *, built_at: int | None = None
) -> HttpResponseBase:
    """Add validators to a rendered 200 answer to GET/HEAD, and swap it for a 304 when they match.

    `built_at` is when a cached result was computed from the current data (core.cache); it serves as
    Last-Modified directly and saves the cache round trip.
    """
    if request.method not in ("GET", "HEAD") or response.status_code != 200 or response.streaming:
        return response
    content_type = response.get("Content-Type", "")
    digest = hashlib.sha256(content_type.encode() + b"\0" + response.content).hexdigest()[:40]
    etag = f'"{digest}"'
    last_modified = built_at if built_at is not None else _first_seen(digest)
    response["ETag"] = etag
    response["Last-Modified"] = http_date(last_modified)
    # Clients and caches may keep the copy but must revalidate it; a 304 then costs no body.
    patch_cache_control(response, no_cache=True)
    return get_conditional_response(request, etag=etag, last_modified=last_modified, response=response)
