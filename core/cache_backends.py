"""Django's Redis cache backend with one Redis client per connection pool instead of one per call."""
from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class SharedClientRedisCacheClient(RedisCacheClient):
    """Django's client builds a `redis.Redis` on every cache call, and each one copies redis-py's table of
    response callbacks, which costs about as much as a round trip to a local Redis. A client bound to a
    connection pool is safe to share between threads (the pool hands out connections), so one is kept
    per pool."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(pool)
        if client is None:
            client = self._clients[pool] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = SharedClientRedisCacheClient
