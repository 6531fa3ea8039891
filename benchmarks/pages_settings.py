"""Settings for benchmarks/pages.py: the project's settings with a URLconf that adds a trivial view."""
from config.settings.base import *  # noqa: F403

ROOT_URLCONF = "pages_urls"
