"""Django's PostgreSQL backend with a per-process breaker on connecting.

A database that hangs (a server stopped, a network that drops packets) makes every new connection wait out
DATABASE_CONNECT_TIMEOUT_SECONDS. Once one attempt failed, this process's next attempts fail at once for a few
seconds (core.breakers), so a worker answers the requests queued behind that one with the error page in
milliseconds instead of one timeout each; static files and cached pages never connect at all.
"""
from django.db.backends.postgresql import base

from core.breakers import BREAKER_SECONDS, Breaker

connect_breaker = Breaker("the database", seconds=BREAKER_SECONDS)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        if connect_breaker.is_open():
            raise base.Database.OperationalError("The database did not answer a moment ago; not waiting on it again.")
        try:
            connection = super().get_new_connection(conn_params)
        except base.Database.Error:
            connect_breaker.failed()
            raise
        connect_breaker.answered()
        return connection
