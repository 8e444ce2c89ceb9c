import pytest
from django.urls import reverse
from tests.admin.test_admin import operator  # noqa
pytestmark = pytest.mark.django_db(transaction=True)
def test_probe(operator, alice):
    operator.raise_request_exception = False
    r = operator.post(reverse("admin:processes_thinkprocess_add"), {"goal": "x", "engine_params": "{}", "engine_state": "{}", **{f"{p}-{k}": "0" for p in ("pending","transitions","conversation") for k in ("TOTAL_FORMS","INITIAL_FORMS","MIN_NUM_FORMS")}})
    print("POST", r.status_code)
