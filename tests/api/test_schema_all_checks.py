"""Every check schemathesis has (`schemathesis run --checks all`), on every operation of
/api/schema/, through its own engine (its deterministic phases: examples, coverage, fuzzing),
against a real Brain (`manage.py brain` on the embedded default) with its bootstrap token: a
request the document allows is accepted, one it forbids refused, every answer is of the
documented status, type, headers and shape, and a wrong or missing token is refused. The
stateful phase is left out (see the test).

`ignored_auth` sends requests with wrong tokens: the Brain runs with the wrong-token lockout
off (VANCETOPE_RATE_TOKEN_FAILURES=off), or it would answer the rest of the run with 429s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import schemathesis
from schemathesis.engine import events

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port

# Requests per operation and phase: the whole run stays within a few minutes.
EXAMPLES = 10

# Schema-valid requests the server still refuses, as `operation: check` with why: the rule is
# one OpenAPI cannot state. Each entry fails the test once it passes (strike it off then); a
# failure not listed here fails it too.
KNOWN = {
    # The value must be of the key's type (a string for llm.model, a number for
    # marvin.maxDepth): the key is a path parameter, the value is in the body, and OpenAPI
    # cannot tie a body's schema to a parameter's value.
    "PUT /api/settings/{key}: positive_data_acceptance",
    # The body's name must equal the name in the URL: again a rule between a path parameter
    # and the body.
    "PUT /api/recipes/{name}: positive_data_acceptance",
    # The tools a recipe adds or removes and the roles it names must exist: the tenant's own
    # tools (MCP servers, client tools) are rows, not a list the document can give.
    "POST /api/recipes: positive_data_acceptance",
    # A multipart upload's file must be UTF-8 text or a PDF with text in it: the document
    # states a binary file (`format: binary`), and its generator sends any bytes.
    "POST /api/documents: positive_data_acceptance",
    # `session` or `project` (one of two query parameters) is required: OpenAPI cannot require
    # one of two parameters.
    "GET /api/memory/lookup: positive_data_acceptance",
    # A run's input names exactly the inputs of that stored workflow: a rule of the row the
    # path parameter names, not of the request.
    "POST /api/workflows/{workflow_id}/run: positive_data_acceptance",
}

pytestmark = [pytest.mark.timeout(900), pytest.mark.embedded_brain]


def body_breaks_document(document: dict[str, Any], case: Any) -> bool:
    """Whether the JSON body of `case` breaks the document's schema for its operation.
    schemathesis's generator still calls some such bodies positive: one seen, for the memory
    item's `oneOf` of four closed objects, had none of them's required `content` and a key
    (`fields`) none of them allows. A refusal of that is no schema-valid request refused."""
    if case.media_type != "application/json" or not isinstance(case.body, dict | list):
        return False
    operation = document["paths"][case.operation.path][case.method.lower()]
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    if schema is None:
        return False
    validator = jsonschema.Draft202012Validator({**schema, "components": document["components"]})
    return not validator.is_valid(case.body)


def failures_of(event: Any, document: dict[str, Any]) -> list[tuple[str, str]]:
    """(`operation: check`, what failed) of each failed check an engine event reports."""
    if not isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
        return []
    found = []
    for case_id, checks in event.recorder.checks.items():
        case = event.recorder.cases[case_id].value
        for check in checks:
            if check.name == "positive_data_acceptance" and body_breaks_document(document, case):
                continue
            if check.failure_info is not None:
                failure = check.failure_info.failure
                detail = f"{failure.title}: {failure.message}"[:300]
                # What was sent and what came back, so a failure says what to fix.
                detail += f"\n    sent: {check.failure_info.code_sample[:600]}"
                interaction = event.recorder.interactions.get(case_id)
                if interaction is not None and interaction.response is not None:
                    answer = interaction.response
                    body = answer.content[:300].decode(errors="replace")
                    detail += f"\n    answered: {answer.status_code} {body}"
                found.append((f"{case.operation.label}: {check.name}", detail))
    return found


def test_every_check_of_schemathesis_passes_on_every_operation(tmp_path: Path) -> None:
    # given a Brain with the wrong-token lockout off
    env = brain_env(tmp_path, VANCETOPE_RATE_TOKEN_FAILURES="off")
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        document = brain.get("/api/schema/?format=json", token)
        schema = schemathesis.openapi.from_url(f"{brain.url}/api/schema/?format=json")
        schema.config.update(headers={"Authorization": f"Bearer {token}"}, workers=1)
        # A lifecycle call waits up to VANCETOPE_LIFECYCLE_WAIT_SECONDS (20) for a busy lane by
        # design, and CI shares its cores: responses are checked against a minute, not 10 s.
        schema.config.checks.update(included_check_names=["all"], max_response_time=60)
        # The deterministic phases: the stateful phase picks its sequences anew each run, so
        # what it meets (a row of a kind it happened to make; a body it filled from an earlier
        # answer by a link it inferred) changes from run to run, and no fixed list can hold it.
        schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
        schema.config.generation.update(
            max_examples=EXAMPLES, deterministic=True, no_shrink=True, database="none"
        )
        # when schemathesis runs every phase with every check
        found: dict[str, str] = {}
        errors: list[str] = []
        for event in schemathesis.engine.from_schema(schema).execute():
            found.update(failures_of(event, document))
            if isinstance(event, events.NonFatalError):
                errors.append(f"{event.label}: {type(event.value).__name__}: {event.value}")
            elif isinstance(event, events.FatalError):
                errors.append(f"{type(event.exception).__name__}: {event.exception}")
    finally:
        brain.stop()
    # then nothing failed but what is listed, and everything listed still fails
    problems = [f"{name} — {found[name]}" for name in sorted(set(found) - KNOWN)]
    problems += [f"{name}: passes now, strike it off KNOWN" for name in sorted(KNOWN - set(found))]
    problems += [error[:400] for error in errors]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
