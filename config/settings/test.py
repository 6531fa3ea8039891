"""Test settings: real PostgreSQL and Redis on loopback unless the environment says otherwise."""
import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/inference_atlas")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")

from config.settings.base import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
