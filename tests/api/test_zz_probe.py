import pytest
from sessions_app.services import FingerprintData, close_session, create_session
from tests.conftest import wait_until
from processes.models import ThinkProcess

pytestmark = pytest.mark.django_db(transaction=True)


def test_probe(alice):
    s = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
    close_session(s.pk)
    api = alice.api()
    url = f"/api/processes/tp_{s.chat_process_id}"
    print(api.post(url + "/reset").json()["status"])
    print(api.post(url + "/start").json()["status"])
    print(api.post(url + "/steer", {"message": "still there?"}, format="json").json())
    wait_until(lambda: ThinkProcess.objects.get(pk=s.chat_process_id).conversation_length >= 2)
    print(
        api.get(url).json()["conversation"],
        api.get(f"/api/sessions/{s.public_id}").json()["status"],
    )
