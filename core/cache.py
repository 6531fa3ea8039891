"""The page cache: rendered pages and API reads kept under their URL and the data generation.

The data generation is one number in the database (core.models.DataGeneration). Every write to a model
whose rows a page or the API shows (the apps of SHOWN_APPS, less the rows of NOT_SHOWN) moves it once the
writing transaction commits, through model signals; writers that skip signals (the fixture loader's bulk
writes, `QuerySet.update`) call generation_bump_on_commit themselves. A page stored under generation N
was rendered after every write that N counts had committed, so it is never older than its key says.
Moving the generation after the commit, not inside the transaction, keeps writers from waiting on each
other; a read that raced the commit only stores its page under the old number, which nobody asks for again.

Entries also expire after READ_CACHE_SECONDS (0 turns the cache off), and a hash of the code is part of
every key, so a deploy never serves pages rendered by the release before it. A cache that stops answering
costs speed only: the read is computed as if nothing were cached. Each process also keeps copies of the
entries it read or wrote lately (ProcessCopies), so a repeated hit costs one query and no cache round trip.
After a bump a Celery task renders the canonical pages again (core.tasks.pages_warm_task), so readers rarely
meet a cold page.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Model
from django.core.signals import request_finished, request_started
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

# Every model of these apps is shown by some page or API read, except the rows of NOT_SHOWN: per-request
# records written by the hundred during a run, which no cached read shows (the run's own rows and the
# summaries written with them in the same transaction move the generation).
SHOWN_APPS = ("catalog", "probes", "lab")
NOT_SHOWN = ("probes.requestmeasurement", "probes.compatoutcome", "lab.sweeprequest")

PAGE_KEY = "page:{generation}:{digest}"
CACHEABLE_STATUSES = (200, 400)
# Entries a process keeps copies of (core.cache.ProcessCopies): the canonical pages and the answers read most.
PROCESS_COPIES = 200
# Seconds between a bump and the warming task, so that a burst of writes is warmed once.
WARM_DELAY_SECONDS = 2


class CacheOutage:
    """This process's view of whether the cache answers: an outage is logged when it starts and when it ends,
    not on every request it slows down."""

    def __init__(self) -> None:
        self._since: float | None = None

    def started(self, what: str) -> None:
        if self._since is None:
            self._since = time.monotonic()
            logger.warning("cache unavailable (first seen by the %s): serving without it", what, exc_info=True)

    def ended(self) -> None:
        if self._since is not None:
            logger.warning("cache answers again after %.0f s", time.monotonic() - self._since)
            self._since = None


cache_outage = CacheOutage()


def read_cache_seconds() -> int:
    return settings.READ_CACHE_SECONDS


@functools.cache
def code_version() -> str:
    """A hash of the project's Python code and templates, read once per process."""
    digest = hashlib.blake2b(digest_size=12)
    root = Path(settings.BASE_DIR)
    packages = [path for path in root.iterdir() if (path / "__init__.py").exists() or path.name == "templates"]
    for path in sorted(file for package in packages for file in package.rglob("*") if file.suffix in (".py", ".html")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# The generation a request read first: every read of the same request (the page, the snapshot it computes
# an answer from) uses one number and one query.
_request = threading.local()


def _request_started(**kwargs: Any) -> None:
    _request.generation = None
    _request.active = True


def _request_finished(**kwargs: Any) -> None:
    _request.active = False


request_started.connect(_request_started, dispatch_uid="core.cache.request_started")
request_finished.connect(_request_finished, dispatch_uid="core.cache.request_finished")


def data_generation() -> int:
    """The current data generation (one query per request). A database that cannot answer it cannot answer the
    page either, so its error is not caught here."""
    if getattr(_request, "active", False) and _request.generation is not None:
        return _request.generation
    from core.models import DataGeneration

    # Every cache hit pays for this read, and the ORM's query building costs twice the round trip itself.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT number FROM {DataGeneration._meta.db_table} WHERE id = %s", [DataGeneration.ONLY])
        row = cursor.fetchone()
    number = DataGeneration.objects.first_number() if row is None else row[0]
    if getattr(_request, "active", False):
        _request.generation = number
    return number


def generation_bump() -> int:
    """Move the data generation on (committed at once) and ask for the canonical pages to be warmed."""
    from core.models import DataGeneration

    if not DataGeneration.objects.filter(pk=DataGeneration.ONLY).update(number=F("number") + 1):
        DataGeneration.objects.first_number()
    _request.generation = None
    generation = data_generation()
    if settings.READ_CACHE_WARM and read_cache_seconds() > 0:
        _enqueue_warm(generation)
    return generation


def _enqueue_warm(generation: int) -> None:
    from celery import current_app

    try:
        current_app.send_task("core.tasks.pages_warm_task", args=[generation], countdown=WARM_DELAY_SECONDS,
                              retry=False)
    except Exception:  # noqa: BLE001 - a broker outage costs the warming only
        logger.warning("could not enqueue page warming for generation %s", generation, exc_info=True)


def generation_bump_on_commit() -> None:
    """Bump the generation when the current transaction commits (at once outside one); once per transaction."""
    pending = connection.run_on_commit
    if any(callback is generation_bump for _, callback, *_ in pending):
        return
    transaction.on_commit(generation_bump)


def _shown_write(**kwargs: Any) -> None:
    if not kwargs.get("raw"):
        generation_bump_on_commit()


def shown_models() -> list[type[Model]]:
    """The models whose rows some page or API read shows (the link tables of many-to-many fields included)."""
    return [
        model
        for label in SHOWN_APPS if label in apps.app_configs
        for model in apps.get_app_config(label).get_models(include_auto_created=True)
        if model._meta.label_lower not in NOT_SHOWN
    ]


def connect_generation_signals() -> None:
    # Connected per model: a receiver for every sender would make every bulk delete fetch its rows.
    for model in shown_models():
        for signal in (post_save, post_delete, m2m_changed):
            uid = f"core.cache.generation.{model._meta.label_lower}"
            signal.connect(_shown_write, sender=model, dispatch_uid=uid)


class ProcessCopies:
    """Copies of the entries of the current generation this process last read from or wrote to the shared
    cache, kept pickled as the cache keeps them, so that a hit costs no round trip and every reader gets its own
    objects. The key names the generation and the code, so a copy is never stale; it expires when the shared
    entry does, and a new generation drops the old one's copies."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._generation: int | None = None
        self._lock = threading.Lock()

    def get(self, generation: int, key: str) -> tuple[int, Any] | None:
        with self._lock:
            copy = self._entries.get(key) if generation == self._generation else None
            if copy is None or time.time() - copy[0] >= read_cache_seconds():
                return None
            self._entries.move_to_end(key)
        return pickle.loads(copy[1])

    def put(self, generation: int, key: str, entry: tuple[int, Any]) -> None:
        pickled = pickle.dumps(entry, pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if generation != self._generation:
                self._entries.clear()
                self._generation = generation
            self._entries[key] = (entry[0], pickled)
            self._entries.move_to_end(key)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


process_copies = ProcessCopies(size=PROCESS_COPIES)


def _cache_key(generation: int, location: Sequence[str], vary: Sequence[str]) -> str:
    raw = "\0".join([code_version(), *location, *vary])
    return PAGE_KEY.format(generation=generation, digest=hashlib.sha256(raw.encode()).hexdigest())


def cached_read(
    *,
    request: HttpRequest,
    build: Callable[[], Any],
    keep: Callable[[Any], bool] = lambda result: True,
    vary: Sequence[str] = (),
    by_host: bool = False,
) -> tuple[Any, int]:
    """(`build()` for this URL at the current data generation, when it was computed in epoch seconds).

    The key is the path and query string (and the scheme and host when `by_host`: API answers carry
    absolute URLs), plus `vary` for what else the result depends on, such as which probe keys the serving
    process has. The result is stored only if `keep(result)`; it must pickle. Only reads that show nothing
    user-specific belong here.
    """
    if read_cache_seconds() <= 0:
        return build(), int(time.time())
    generation = data_generation()
    location = [request.path, request.META.get("QUERY_STRING", "")]
    if by_host:
        location += [request.scheme, request.get_host()]
    key = _cache_key(generation, location, vary)
    found = process_copies.get(generation, key)
    if found is not None:
        built, result = found
        return result, built
    try:
        found = cache.get(key)
    except Exception:  # noqa: BLE001 - any cache backend failure degrades to computing the read
        cache_outage.started("page cache")
        return build(), int(time.time())
    cache_outage.ended()
    if found is not None:
        process_copies.put(generation, key, found)
        built, result = found
        return result, built
    built = int(time.time())
    result = build()
    if keep(result):
        try:
            cache.set(key, (built, result), timeout=read_cache_seconds())
        except Exception:  # noqa: BLE001
            cache_outage.started("page cache")
        else:
            process_copies.put(generation, key, (built, result))
    return result, built


def cached_page(*, vary: Callable[[], Sequence[str]] | None = None) -> Callable:
    """Serve a page from the page cache; responses say `X-Page-Cache: hit` or `miss`. The pages show nothing
    user-specific, so the URL, the generation and `vary()` identify the HTML."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        # A read-only page gains nothing from ATOMIC_REQUESTS: without it a hit costs one round trip.
        @transaction.non_atomic_requests
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if read_cache_seconds() <= 0 or request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            rendered: list[HttpResponse] = []

            def build() -> tuple[int, bytes]:
                rendered.append(view(request, *args, **kwargs))
                return rendered[0].status_code, rendered[0].content

            (status, body), _ = cached_read(
                request=request, build=build, keep=lambda page: page[0] in CACHEABLE_STATUSES,
                vary=vary() if vary else (),
            )
            response = rendered[0] if rendered else HttpResponse(body, status=status)
            response["X-Page-Cache"] = "miss" if rendered else "hit"
            return response

        return wrapper

    return decorate


class PerGeneration:
    """One value per data generation, built once by this process and shared by every request (a snapshot of
    the catalog for the wizard, say); built on every call when the page cache is off."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._kept: tuple[int, Any] | None = None
        self._lock = threading.Lock()
        _per_generation.append(self)

    def get(self) -> Any:
        if read_cache_seconds() <= 0:
            return self._build()
        generation = data_generation()
        kept = self._kept
        if kept is not None and kept[0] == generation:
            return kept[1]
        with self._lock:
            if self._kept is None or self._kept[0] != generation:
                self._kept = (generation, self._build())
            return self._kept[1]

    def clear(self) -> None:
        self._kept = None


_per_generation: list[PerGeneration] = []


def page_cache_clear() -> None:
    """Empty the page cache and every per-generation value of this process."""
    cache.clear()
    process_copies.clear()
    for kept in _per_generation:
        kept.clear()


def pages_warm(*, generation: int) -> int:
    """Render the canonical pages (settings.PAGE_CACHE_WARM_PATHS) into the cache if `generation` is still
    the current one; returns how many were rendered (0 when a newer bump has its own warming queued)."""
    from django.test import Client

    if read_cache_seconds() <= 0 or data_generation() != generation:
        return 0
    scheme, _, host = settings.SITE_URL.partition("://")
    client = Client(HTTP_HOST=host.rstrip("/"), secure=scheme == "https")
    rendered = 0
    for path in import_string(settings.PAGE_CACHE_WARM_PATHS)():
        if data_generation() != generation:
            break
        response = client.get(path)
        rendered += response.status_code == 200
    return rendered
