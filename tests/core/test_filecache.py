"""The SQLite default's file cache culls its directory once every CULL_EVERY sets, not on every set."""
from core.filecache import CULL_EVERY, SparselyCulledFileCache


def test_the_directory_is_culled_once_every_cull_every_sets(tmp_path):
    cache = SparselyCulledFileCache(str(tmp_path), {"OPTIONS": {"MAX_ENTRIES": 10, "CULL_FREQUENCY": 2}})
    for number in range(CULL_EVERY - 1):
        cache.set(f"key-{number}", number)
    assert len(list(tmp_path.glob("*.djcache"))) == CULL_EVERY - 1  # over MAX_ENTRIES, not listed yet
    cache.set("one-more", 1)
    assert len(list(tmp_path.glob("*.djcache"))) <= CULL_EVERY // 2 + 1  # culled by half, then the new entry
    assert cache.get("one-more") == 1
