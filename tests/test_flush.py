"""The flush after a transactional test empties the tables but Django's content types and
permissions (tests/support/flush.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from processes.models import ThinkProcess


@pytest.mark.django_db(transaction=True)
def test_a_flush_empties_the_tables_but_content_types_and_permissions():
    # given a user, and the content types and permissions migrate made
    get_user_model().objects.create_user("someone")
    content_types = ContentType.objects.count()
    permissions = Permission.objects.count()
    assert content_types
    assert permissions
    # when the database is flushed as after a transactional test (which keeps the sequences:
    # ids restarting at 1 would meet the caches of earlier tests' processes)
    call_command("flush", interactive=False, verbosity=0, reset_sequences=False)
    # then the user is gone, and the content types and permissions are the same rows
    assert not get_user_model().objects.exists()
    assert ContentType.objects.count() == content_types
    assert Permission.objects.count() == permissions
    process_type = ContentType.objects.get_for_model(ThinkProcess)
    assert Permission.objects.filter(content_type=process_type, codename="view_thinkprocess")


@pytest.mark.django_db(transaction=True)
def test_a_flush_makes_a_missing_permission_again_and_skips_the_checks_otherwise(monkeypatch):
    from django.core.management import sql

    sent: list[str] = []
    real = sql.emit_post_migrate_signal
    monkeypatch.setattr(
        sql, "emit_post_migrate_signal", lambda *a, **k: (sent.append("sent"), real(*a, **k))
    )
    # given the derived rows as post_migrate makes them
    call_command("flush", interactive=False, verbosity=0, reset_sequences=False)
    complete = Permission.objects.count()
    sent.clear()
    # when a flush finds them all: post_migrate is not sent (its checks cost ~50 queries)
    call_command("flush", interactive=False, verbosity=0, reset_sequences=False)
    assert sent == []
    # when a test took a permission away: the flush sends it, and the permission is back
    Permission.objects.filter(codename="view_thinkprocess").delete()
    call_command("flush", interactive=False, verbosity=0, reset_sequences=False)
    assert sent == ["sent"]
    assert Permission.objects.count() == complete
    assert Permission.objects.filter(codename="view_thinkprocess").exists()
