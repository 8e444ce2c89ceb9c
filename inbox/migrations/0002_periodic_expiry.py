"""The inbox's expiry sweep as a django-celery-beat row, so operators can see, retime or
disable it in the admin (the embedded Brain runs beat in-process)."""

from django.db import migrations

NAME = "vancetope: expire inbox items"
TASK = "inbox.expire_items"
EVERY_SECONDS = 60


def create_sweep(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    interval, _ = IntervalSchedule.objects.get_or_create(every=EVERY_SECONDS, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=NAME, defaults={"task": TASK, "interval": interval, "enabled": True}
    )


def remove_sweep(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("inbox", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_sweep, remove_sweep)]
