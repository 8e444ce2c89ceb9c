"""The hourly pruning of old TriggerEvents as a django-celery-beat row, so operators can see,
retime or disable it in the admin."""

from django.db import migrations

NAME = "vancetope: prune old trigger events"


def create_prune(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    interval, _ = IntervalSchedule.objects.get_or_create(every=3600, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={"task": "triggers.prune_trigger_events", "interval": interval, "enabled": True},
    )


def remove_prune(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("triggers", "0003_webhooks"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_prune, remove_prune)]
