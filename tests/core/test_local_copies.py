"""Each process's copies of the read cache's entries (core.cache.LocalCopies): no round trip for an entry seen
before, never older than an entry may be, bounded in size, and every read gets objects of its own."""
import pickle

import pytest
from django.core.cache import cache

from core import cache as read_cache
from core.cache import LocalCopies, shared_read

pytestmark = pytest.mark.usefixtures("fresh_cache")


def _fingerprints():
    return read_cache.Fingerprints(scopes=("catalog",), shared="shared-state", owners={})


def test_a_piece_seen_once_is_read_again_without_the_cache_server(monkeypatch):
    built = []
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: built.append(1) or [1]) == [1]

    def unreachable(*args, **kwargs):
        raise AssertionError("the cache server was asked")

    monkeypatch.setattr(cache, "get", unreachable)
    monkeypatch.setattr(cache, "get_many", unreachable)
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: [2]) == [1]
    assert built == [1]


def test_a_piece_another_process_stored_is_copied_on_its_first_read():
    shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "from another process")
    read_cache.local_copies.clear()  # as in a process that never built it
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "rebuilt") == (
        "from another process")


def test_every_read_gets_its_own_objects():
    first = shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: {"rows": [1]})
    first["rows"].append("changed by the caller")
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: {}) == {"rows": [1]}


def test_no_copy_outlives_the_entry_it_copies(monkeypatch, settings):
    settings.READ_CACHE_SECONDS = 60
    clock = [1_000_000.0]
    monkeypatch.setattr(read_cache.time, "time", lambda: clock[0])
    shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "old")
    clock[0] += 59
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "new") == "old"
    clock[0] += 2  # older than READ_CACHE_SECONDS, in this process and in the cache server
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "new") == "new"


def test_the_copies_keep_within_their_budget_least_recently_used_out(settings):
    entry = "x" * 1000
    blob = pickle.dumps((10.0, entry))
    settings.READ_CACHE_LOCAL_BYTES = 3 * len(blob)
    copies = LocalCopies()
    for key in "abc":
        copies.put(key, blob, entry, built=10.0)
    assert copies.get_many(["a"], built_after=0.0) == {"a": (entry, 10.0)}  # "a" is now the most recently used
    copies.put("d", blob, entry, built=10.0)
    assert set(copies.get_many("abcd", built_after=0.0)) == {"a", "c", "d"}
    copies.put("huge", blob * 4, entry * 4, built=10.0)  # larger than the whole budget: not kept
    assert copies.get_many(["huge"], built_after=0.0) == {}
    settings.READ_CACHE_LOCAL_BYTES = 0
    copies.put("e", blob, entry, built=10.0)
    assert copies.get_many(["e"], built_after=0.0) == {}


def test_only_entries_no_reader_can_change_are_shared_between_reads():
    copies = LocalCopies()
    page = (200, b"<html>")
    mutable = {"rows": [1]}
    copies.put("page", pickle.dumps((10.0, page)), page, built=10.0)
    copies.put("rows", pickle.dumps((10.0, mutable)), mutable, built=10.0)
    assert copies.get_many(["page"], built_after=0.0)["page"][0] is page
    first, second = (copies.get_many(["rows"], built_after=0.0)["rows"][0] for _ in range(2))
    assert first == second == mutable and first is not second and first is not mutable


def test_entries_are_keyed_by_the_code_that_built_them(monkeypatch):
    shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "built by this release")
    monkeypatch.setattr(read_cache, "code_version", lambda: "another release")
    assert shared_read(kind="test", fingerprints=_fingerprints(), key=["k"], build=lambda: "rebuilt") == "rebuilt"
