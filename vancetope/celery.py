"""The Celery app: run by distributed workers and beat; the embedded Brain runs its tasks itself."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")

app = Celery("vancetope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The lane's tasks live in processes/lane/tasks.py, not in an app's top-level tasks module.
app.autodiscover_tasks(["processes.lane"])
