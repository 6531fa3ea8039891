"""Settings for every environment, driven by environment variables.

With nothing set, the project runs on SQLite and a filesystem Celery transport so a fresh
machine can serve the site, worker and scheduler with one command. DATABASE_URL selects
PostgreSQL; REDIS_URL selects Redis for the cache and the Celery broker.
"""
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
if env.bool("DJANGO_READ_DOT_ENV_FILE", default=False):
    environ.Env.read_env(BASE_DIR / ".env")

# Only a development key has a default; config.settings.production requires the variable.
SECRET_KEY = env("DJANGO_SECRET_KEY", default="dev-only-insecure-key-do-not-use-in-production")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "core",
    "catalog",
    "probes",
    "lab",
    "recommend",
]

MIDDLEWARE = [
    "core.middleware.RequestBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # TRACE refused; pages rate-limited per client (the API counts in DRF's throttles).
    "core.middleware.PageGateMiddleware",
    # ETag on every GET and HEAD answer, 304 when the client's copy is current (core.cache adds Last-Modified).
    "core.middleware.ETagMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Requests declaring a larger body get 413 before it is read (core.middleware): the lab's 64 MiB result file and
# the form around it. JSON bodies have their own, lower limit, DATA_UPLOAD_MAX_MEMORY_SIZE (core.parsers).
REQUEST_MAX_BODY_BYTES = env.int("REQUEST_MAX_BODY_BYTES", default=65 * 1024 * 1024)

# Paths PageGateMiddleware does not rate-limit: the API and the admin have their own limits, static files none.
PAGE_THROTTLE_EXEMPT_PATHS = ("/api/", "/admin/", "/static/")
# Paths whose HTML comes from third-party templates with inline code (core.middleware).
CSP_THIRD_PARTY_UI_PATHS = ("/admin/", "/api/")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DJANGO_CONN_MAX_AGE", default=0)
# A database that stops answering must give the error page within seconds, not hold a worker until gunicorn
# kills it: a bound on connecting (which covers a server that accepts and never answers) and on each statement
# (which covers one that waits on a lock), the latter settable per process (a migration may need more).
DATABASE_CONNECT_TIMEOUT_SECONDS = env.int("DATABASE_CONNECT_TIMEOUT_SECONDS", default=5)
DATABASE_STATEMENT_TIMEOUT_MS = env.int("DATABASE_STATEMENT_TIMEOUT_MS", default=5_000)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, plus a breaker: a connection attempt that failed is not waited on again for a few seconds.
    DATABASES["default"]["ENGINE"] = "core.postgresql"
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        connect_timeout=DATABASE_CONNECT_TIMEOUT_SECONDS,
        options=f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT_MS}",
    )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite has no statement timeout; a writer waits this long for another's lock, then fails.
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=DATABASE_CONNECT_TIMEOUT_SECONDS)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The fixture loaders `manage.py load_catalog` runs, in this order, in one transaction: the catalog first, since
# the rows of the others name catalog tools, models, hardware and sources.
FIXTURE_LOADERS = {
    "catalog": "catalog.loading.load_counts",
    "probes": "probes.loading.load",
    "lab": "lab.loading.load",
    "recommend": "recommend.loading.load",
}

REDIS_URL = env("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env("DJANGO_CACHE_PREFIX", default="atlas"),
            # A cache that stops answering must slow pages down, not hang them: Redis on the same network answers
            # in milliseconds, and a worker that waited this long skips it for a few seconds (core.breakers).
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
else:
    # Files, not per-process memory: every process must see the page cache's generation move.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
            "OPTIONS": {"MAX_ENTRIES": 2000},
        }
    }

# Seconds a cached page or API read may live (entries are keyed by the generation, so this bounds the space
# that superseded entries take). 0 turns the page cache off.
READ_CACHE_SECONDS = env.int("READ_CACHE_SECONDS", default=300)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env("DJANGO_STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
# WhiteNoise warns on every request while the collectstatic target does not exist yet.
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
# Lets runserver and gunicorn serve assets without a collectstatic step on a fresh machine.
WHITENOISE_USE_FINDERS = env.bool("DJANGO_WHITENOISE_USE_FINDERS", default=True)

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", default="INFO")},
    "loggers": {
        # Request lines of these clients can carry Authorization headers; keep them quiet.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

# Celery: Redis when REDIS_URL is set, otherwise a filesystem transport that needs no server.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    _queue_dir = VAR_DIR / "celery" / "queue"
    _processed_dir = VAR_DIR / "celery" / "processed"
    _control_dir = VAR_DIR / "celery" / "control"
    # kombu's filesystem transport expects its folders to exist; without control_folder it writes ./control.
    for _folder in (_queue_dir, _processed_dir, _control_dir):
        _folder.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(_processed_dir),
        "control_folder": str(_control_dir),
        "store_processed": False,
    }
else:
    # A task unacknowledged for this long is redelivered; it must exceed the longest probe run.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)}
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=900)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=960)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict = {}

# --- Probes (schedule, workloads) ---
from celery.schedules import crontab  # noqa: E402
from kombu import Queue  # noqa: E402

# Workers carry a region label; runs record it. A worker with PROBE_REGION=eu-west consumes the
# default queue and "probes.eu-west", so runs pinned to that region only run there.
PROBE_REGION = env("PROBE_REGION", default="")
PROBE_QUEUE_PREFIX = "probes."
if PROBE_REGION:
    CELERY_TASK_QUEUES = (Queue("celery"), Queue(PROBE_QUEUE_PREFIX + PROBE_REGION))
# Regions the scheduler fans each scheduled probe out to; empty means "any worker" (default queue).
PROBE_SCHEDULE_REGIONS = env.list("PROBE_SCHEDULE_REGIONS", default=[])
# Workload names come from probe_client.WORKLOADS (about 100, 1k and 10k input tokens).
PROBE_SCHEDULED_WORKLOADS = env.list("PROBE_SCHEDULED_WORKLOADS", default=["in-100", "in-1k", "in-10k"])
# Fixed output length per workload, as Artificial Analysis pairs them (100/300, 1k/1k, 10k/1.5k);
# PROBE_MAX_OUTPUT_TOKENS, when set, overrides all of them.
PROBE_WORKLOAD_MAX_TOKENS = {"in-100": 300, "in-1k": 1000, "in-10k": 1500}
PROBE_MAX_OUTPUT_TOKENS = env.int("PROBE_MAX_OUTPUT_TOKENS", default=0)
PROBE_PARALLEL_WORKLOAD = env("PROBE_PARALLEL_WORKLOAD", default="in-1k")
PROBE_PARALLEL_CONCURRENCY = env.int("PROBE_PARALLEL_CONCURRENCY", default=10)
# Requests per single-stream run; a parallel run sends at least one request per stream.
PROBE_SPEED_REQUESTS = env.int("PROBE_SPEED_REQUESTS", default=3)
# Probe runs and lab sweeps (core.leases). A running run renews its lease every third of this; a lapsed lease
# means its worker died. A queued run no worker claimed within a lease is sent again (a broker that restarted
# without its queue forgets it). Each recovery pass runs once a lease, so either is re-sent within two leases.
RUN_LEASE_SECONDS = env.int("RUN_LEASE_SECONDS", default=90)
RUN_MAX_ATTEMPTS = env.int("RUN_MAX_ATTEMPTS", default=3)
RUN_BUSY_RETRY_SECONDS = env.int("RUN_BUSY_RETRY_SECONDS", default=30)
RUN_BUSY_MAX_RETRIES = env.int("RUN_BUSY_MAX_RETRIES", default=40)
# A run queued this long measures nothing current any more: recovery fails it as Expired.
RUN_MAX_AGE_SECONDS = env.int("RUN_MAX_AGE_SECONDS", default=6 * 3600)
# The client's own per-request deadlines are far shorter; these only stop a wedged run.
PROBE_RUN_SOFT_TIME_LIMIT = env.int("PROBE_RUN_SOFT_TIME_LIMIT", default=600)
PROBE_RUN_TIME_LIMIT = PROBE_RUN_SOFT_TIME_LIMIT + 30
# Benchmark-lab sweeps stop themselves at their plan's duration limit (at most an hour); this is the backstop.
SWEEP_RUN_SOFT_TIME_LIMIT = env.int("SWEEP_RUN_SOFT_TIME_LIMIT", default=3900)
# A probe that waited in the broker longer than this measures nothing useful any more.
PROBE_RUN_TASK_EXPIRES = env.int("PROBE_RUN_TASK_EXPIRES", default=3 * 3600)
PROBE_SUMMARY_WINDOW_DAYS = env.int("PROBE_SUMMARY_WINDOW_DAYS", default=30)
PROBE_MEDIAN_WINDOW_HOURS = 72  # Artificial Analysis reports the median of the past 72 hours.

# The cron expressions of the probe beat entries, as written: the methodology page describes them
# (cron-descriptor) from these strings, since a crontab object keeps only the expanded sets publicly.
PROBE_CRON_SCHEDULES = {
    # https://crontab.guru/#7_*/3_*_*_*  (every 3 hours, as Artificial Analysis does)
    "probes-speed-every-3h": "7 */3 * * *",
    # https://crontab.guru/#37_4_*_*_*  (04:37 daily: 10 parallel streams and the compat suite)
    "probes-parallel-and-compat-daily": "37 4 * * *",
}
CELERY_BEAT_SCHEDULE.update(
    {
        "probes-speed-every-3h": {
            "task": "probes.tasks.probe_schedule_speed_task",
            "schedule": crontab.from_string(PROBE_CRON_SCHEDULES["probes-speed-every-3h"]),
            "options": {"expires": 3600},
        },
        "probes-parallel-and-compat-daily": {
            "task": "probes.tasks.probe_schedule_daily_task",
            "schedule": crontab.from_string(PROBE_CRON_SCHEDULES["probes-parallel-and-compat-daily"]),
            "options": {"expires": 3600},
        },
        # Every lease: a run whose worker died is re-sent at most two leases after its last renewal (one for the
        # lease to lapse, one for the next recovery to see it), docs/operations.md. A recovery not started before
        # the next one is due is dropped.
        "probes-recover-runs": {
            "task": "probes.tasks.probe_runs_recover_task",
            "schedule": float(RUN_LEASE_SECONDS),
            "options": {"expires": 0.8 * RUN_LEASE_SECONDS},
        },
        "lab-recover-sweeps": {
            "task": "lab.tasks.sweep_runs_recover_task",
            "schedule": float(RUN_LEASE_SECONDS),
            "options": {"expires": 0.8 * RUN_LEASE_SECONDS},
        },
    }
)

# --- REST API ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Deny by default: every view may read, only staff may write unless a view says otherwise.
    "DEFAULT_PERMISSION_CLASSES": ["core.permissions.IsStaffOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.BoundedJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["core.throttles.AnonBurstThrottle", "core.throttles.UserBurstThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env("API_THROTTLE_ANON", default="120/min"),
        # Pages, per client address (core.middleware.PageGateMiddleware): most are cached.
        "pages": env("PAGE_THROTTLE", default="600/min"),
        "user": env("API_THROTTLE_USER", default="600/min"),
        "probe_runs": env("API_THROTTLE_PROBE_RUNS", default="30/hour"),
    },
    # Number of reverse proxies in front of the app; 0 means the socket peer is the client and
    # X-Forwarded-For is ignored, so a forged header cannot buy a fresh throttle bucket.
    "NUM_PROXIES": env.int("API_NUM_PROXIES", default=0),
    "EXCEPTION_HANDLER": "core.exceptions.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.schema.AtlasAutoSchema",
    "URL_FORMAT_OVERRIDE": "format",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "core.negotiation.FormatParamNegotiation",
    "COERCE_DECIMAL_TO_STRING": True,
    "DATETIME_FORMAT": "iso-8601",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Inference Atlas API",
    "DESCRIPTION": (
        "The catalog of LLM inference engines and hosted providers, and every probe measurement, "
        "as JSON or CSV. Anonymous clients read within a rate limit; staff write with a token. "
        "Errors always have the shape {\"error\": {\"code\", \"message\", \"fields\"}}."
    ),
    "VERSION": "1.0.0",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"SweepRunKindEnum": "lab.models.SweepRun.Kind", "ToolKindEnum": "catalog.models.Tool.Kind",
                            "RankingFigureEnum": "lab.evidence.FIGURE_NAMES"},
}
