from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("processes", "0002_conversation_epoch"),
    ]

    operations = [
        migrations.AddField(
            model_name="thinkprocess",
            name="consumed_count",
            field=models.PositiveBigIntegerField(default=0),
        ),
        # Existing processes: count what their turns have consumed so far.
        migrations.RunSQL(
            "UPDATE processes_thinkprocess SET consumed_count = ("
            "SELECT COUNT(*) FROM processes_pendingmessage m "
            "WHERE m.process_id = processes_thinkprocess.id AND m.consumed)",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
