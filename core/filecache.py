"""The cache of the SQLite default (`make run`): Django's file-based cache, culled less often.

Django's FileBasedCache lists every file of its directory on every `set` to decide whether to cull, so with
the page cache's entries in it each API request's rate-limit count cost a directory scan (90% of a cached
API read, profiled). This one looks once every CULL_EVERY sets of a process; the directory may then exceed
MAX_ENTRIES by that many entries per process before it is culled.
"""
from __future__ import annotations

import threading

from django.core.cache.backends.filebased import FileBasedCache

CULL_EVERY = 100


class SparselyCulledFileCache(FileBasedCache):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._sets_since_cull = 0
        self._lock = threading.Lock()

    def _cull(self) -> None:
        with self._lock:
            self._sets_since_cull += 1
            due = self._sets_since_cull >= CULL_EVERY
            if due:
                self._sets_since_cull = 0
        if due:
            super()._cull()
