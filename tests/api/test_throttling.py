"""Rate limits answer 429 with Retry-After, per client, stored in Redis; a forged X-Forwarded-For buys nothing."""
import pytest

from tests.factories import ProbeTargetFactory, ToolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_limits(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/min", "user": "5/min", "probe_runs": "2/hour"},
    }


def test_anonymous_clients_get_429_with_retry_after(api_client, small_limits):
    statuses = [api_client.get("/api/v1/tools/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = api_client.get("/api/v1/tools/")
    assert response.status_code == 429
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 60
    error = response.json()["error"]
    assert error["code"] == "throttled"
    assert f"{wait} second" in error["message"]  # "1 second" in a window's last second, "N seconds" before


def test_the_file_cache_of_the_sqlite_default_counts_the_same_way(api_client, small_limits, settings, tmp_path):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path)}}
    statuses = [api_client.get("/api/v1/tools/").status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]


def test_forged_x_forwarded_for_does_not_reset_the_limit(api_client, small_limits):
    statuses = [
        api_client.get("/api/v1/tools/", HTTP_X_FORWARDED_FOR=f"203.0.113.{attempt}").status_code
        for attempt in range(6)
    ]
    assert statuses == [200, 200, 200, 429, 429, 429]


def test_behind_one_proxy_only_the_address_the_proxy_appended_counts(api_client, small_limits, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    # The client forges a first hop; the trusted proxy appends the real peer, 198.51.100.7, last.
    statuses = [
        api_client.get("/api/v1/tools/", HTTP_X_FORWARDED_FOR=f"203.0.113.{attempt}, 198.51.100.7").status_code
        for attempt in range(5)
    ]
    assert statuses == [200, 200, 200, 429, 429]
    other_client = api_client.get("/api/v1/tools/", HTTP_X_FORWARDED_FOR="203.0.113.1, 198.51.100.8")
    assert other_client.status_code == 200


def test_authenticated_users_have_their_own_larger_bucket(user_client, api_client, small_limits):
    statuses = [user_client.get("/api/v1/tools/").status_code for _ in range(6)]
    assert statuses == [200, 200, 200, 200, 200, 429]
    assert api_client.get("/api/v1/tools/").status_code == 200


def test_the_limit_is_kept_in_redis_not_per_process(api_client, small_limits, settings):
    import time

    from django.core.cache import cache

    assert settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    window = int(time.time() // 60)
    for _ in range(3):
        api_client.get("/api/v1/tools/")
    counted = [cache.get(f"throttle:anon:127.0.0.1:{number}") or 0 for number in (window, window + 1)]
    assert sum(counted) == 3


def test_triggering_runs_has_its_own_budget(staff_client, small_limits, django_capture_on_commit_callbacks):
    ProbeTargetFactory(slug="t0", tool=ToolFactory())
    statuses = []
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=False):
            statuses.append(
                staff_client.post("/api/v1/probes/targets/t0/run/", {"suites": ["compat"]}, format="json").status_code
            )
    assert statuses == [202, 202, 429]
