"""The Brain's periodic sweeps as django-celery-beat rows, so operators can see, retime or
disable them in the admin."""

from django.db import migrations

SWEEPS = [
    # (name, task, every seconds)
    ("vancetope: suspend idle sessions", "sessions_app.sweep_idle_sessions", 60),
    ("vancetope: recover lanes and lost wake-ups", "processes.sweep_lanes", 10),
]


def create_sweeps(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, seconds in SWEEPS:
        interval, _ = IntervalSchedule.objects.get_or_create(every=seconds, period="seconds")
        PeriodicTask.objects.get_or_create(
            name=name,
            defaults={"task": task, "interval": interval, "enabled": True},
        )


def remove_sweeps(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name__in=[name for name, _, _ in SWEEPS]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("brain_sessions", "0002_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_sweeps, remove_sweeps)]
