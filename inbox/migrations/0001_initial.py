import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("processes", "0003_consumed_count"),
        ("tenancy", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="InboxItem",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("origin_public_id", models.CharField(max_length=32)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("OUTPUT_TEXT", "Output Text"),
                            ("APPROVAL", "Approval"),
                            ("QUESTION", "Question"),
                        ],
                        max_length=16,
                    ),
                ),
                ("title", models.CharField(max_length=200)),
                ("body", models.TextField(blank=True, help_text="Markdown")),
                ("options", models.JSONField(blank=True, default=list)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("OPEN", "Open"),
                            ("ANSWERED", "Answered"),
                            ("DISMISSED", "Dismissed"),
                            ("EXPIRED", "Expired"),
                        ],
                        default="OPEN",
                        max_length=16,
                    ),
                ),
                ("answer", models.JSONField(blank=True, null=True)),
                ("answered_at", models.DateTimeField(blank=True, null=True)),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("default_action", models.JSONField(blank=True, null=True)),
                ("origin_delivered", models.BooleanField(blank=True, null=True)),
                ("origin_note", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "answered_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "origin_process",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="inbox_items",
                        to="processes.thinkprocess",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="inbox_items",
                        to="tenancy.project",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="inbox_items",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "inbox item",
                "ordering": ["-created_at", "-pk"],
            },
        ),
        migrations.CreateModel(
            name="InboxTransition",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("call", models.CharField(max_length=16)),
                ("from_status", models.CharField(blank=True, max_length=16)),
                ("to_status", models.CharField(max_length=16)),
                ("detail", models.TextField(blank=True)),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "item",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="transitions",
                        to="inbox.inboxitem",
                    ),
                ),
            ],
            options={
                "ordering": ["item", "at", "pk"],
            },
        ),
        migrations.AddIndex(
            model_name="inboxitem",
            index=models.Index(fields=["user", "status"], name="inbox_inbox_user_id_bbf0ff_idx"),
        ),
        migrations.AddIndex(
            model_name="inboxitem",
            index=models.Index(
                fields=["status", "expires_at"], name="inbox_inbox_status_393554_idx"
            ),
        ),
    ]
