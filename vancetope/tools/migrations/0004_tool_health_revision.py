from django.db import migrations, models


def start_revision(apps, schema_editor):
    """A database that holds verdicts already starts at revision 1: revision 0 means "none was
    ever written", and a lane would read no down tools at all."""
    if apps.get_model("tools", "ToolHealth").objects.exists():
        apps.get_model("tools", "ToolHealthRevision").objects.create(pk=1, revision=1)


class Migration(migrations.Migration):
    dependencies = [
        ("tools", "0003_diagnosis_source"),
    ]

    operations = [
        migrations.CreateModel(
            name="ToolHealthRevision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("revision", models.PositiveBigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(start_revision, migrations.RunPython.noop),
    ]
