"""Settings are read from the environment: check each documented combination in a fresh interpreter."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PROBE = (
    "import json, django; from django.conf import settings; django.setup();"
    "print(json.dumps({'engine': settings.DATABASES['default']['ENGINE'],"
    " 'db_name': str(settings.DATABASES['default']['NAME']),"
    " 'cache': settings.CACHES['default']['BACKEND'], 'broker': settings.CELERY_BROKER_URL}))"
)
VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY")


def _settings_with(env: dict[str, str], module: str = "config.settings.base") -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    clean.update(env, DJANGO_SETTINGS_MODULE=module)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60
    )


def test_nothing_set_means_sqlite_and_an_embedded_broker():
    result = _settings_with({})
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert loaded["engine"] == "django.db.backends.sqlite3"
    assert loaded["db_name"].endswith("var/db.sqlite3")
    assert loaded["cache"] == "django.core.cache.backends.filebased.FileBasedCache"  # shared by web, worker, beat
    assert loaded["broker"] == "filesystem://"


def test_database_url_selects_postgresql_and_redis_url_selects_redis():
    result = _settings_with(
        {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/some_db", "REDIS_URL": "redis://127.0.0.1:6379/3"}
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert loaded["engine"] == "core.postgresql"  # Django's, with a breaker on connecting
    assert loaded["db_name"] == "some_db"
    assert loaded["cache"].endswith("RedisCache")
    assert loaded["broker"] == "redis://127.0.0.1:6379/3"


def test_production_settings_refuse_to_start_without_a_secret_key():
    result = _settings_with({"DJANGO_ALLOWED_HOSTS": "atlas.example.org"}, module="config.settings.production")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


@pytest.mark.slow
def test_production_settings_pass_the_deployment_checklist():
    env = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY="a" * 20 + "-Zq8#x!" + "b" * 40,
        DJANGO_ALLOWED_HOSTS="atlas.example.org",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
