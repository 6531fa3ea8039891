"""Settings for benchmarks/api.py: the project's settings with a URLconf that adds a trivial DRF view."""
from config.settings.base import *  # noqa: F403

ROOT_URLCONF = "api_urls"
