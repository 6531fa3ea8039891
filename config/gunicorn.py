"""gunicorn's settings wherever the site is served in earnest (`make run`, docker-compose): `gunicorn -c config/gunicorn.py`.

Threads, because a request that waits on a hung database (up to DATABASE_CONNECT_TIMEOUT_SECONDS) must not hold
up the static files and cached pages queued behind it in the same worker: with sync workers they waited too
(benchmarks/results/hung-services.md, tests/core/test_database_outage.py).
"""
worker_class = "gthread"
threads = 4
