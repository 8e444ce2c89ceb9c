"""PostgreSQL whose health check skips a connection that has just worked.

With CONN_HEALTH_CHECKS, Django checks a kept connection (`SELECT 1`, a round trip to the
server) the first time it is used in each request, and every service call of a socket and every
lane task is such a request. At a few requests per chat turn those checks were a measurable part
of a turn. Here a connection that ran a query without a connection error less than
`VANCETOPE_DB_CHECK_AFTER_IDLE_SECONDS` ago is taken as healthy; one idle for longer is checked
as before. A connection that failed is always checked (Django's own rule), so a restarted server
costs at most the requests that were already running on the old connection.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    # time.monotonic() when this connection last opened a cursor.
    used_at: float | None = None

    def create_cursor(self, name: str | None = None) -> Any:
        self.used_at = time.monotonic()
        return super().create_cursor(name)

    def close_if_unusable_or_obsolete(self) -> None:
        worked = self.connection is not None and not self.errors_occurred
        super().close_if_unusable_or_obsolete()
        if self.connection is None or not worked or self.used_at is None:
            return
        if time.monotonic() - self.used_at < settings.VANCETOPE_DB_CHECK_AFTER_IDLE_SECONDS:
            self.health_check_done = True
