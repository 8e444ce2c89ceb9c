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
