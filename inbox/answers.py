"""What an answer to each kind of item looks like (docs/protocol.md, `inbox-answer`), and how it
reads as text for the process that posted the item.

| kind        | answer                                                       |
| ----------- | ------------------------------------------------------------ |
| APPROVAL    | `{"decision": "approve" or "reject", "comment"?}`            |
| QUESTION    | `{"text"}` or `{"choice"}` (one of the item's options)       |
| OUTPUT_TEXT | none: there is nothing to answer (409); it is dismissed      |
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from inbox.models import InboxKind
from vancetope.errors import BadRequest

NonEmpty = Annotated[str, Field(min_length=1)]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApprovalAnswer(_Answer):
    decision: Literal["approve", "reject"]
    comment: str | None = None


class QuestionAnswer(_Answer):
    text: NonEmpty | None = None
    choice: NonEmpty | None = None

    @model_validator(mode="after")
    def _one_of_text_or_choice(self) -> QuestionAnswer:
        if (self.text is None) == (self.choice is None):
            raise ValueError("give either text or choice")
        return self


SHAPES: dict[str, type[_Answer]] = {
    InboxKind.APPROVAL: ApprovalAnswer,
    InboxKind.QUESTION: QuestionAnswer,
}


def checked_answer(
    kind: str, options: list[str], answer: Any, *, where: str = "answer"
) -> dict[str, Any]:
    """The answer as stored (unset fields left out); a BadRequest naming the field when its
    shape does not fit the kind. Call only for kinds that take an answer (SHAPES)."""
    if not isinstance(answer, dict):
        raise BadRequest.naming(where, f"must be an object, like {example(kind)}")
    try:
        model = SHAPES[kind].model_validate(answer)
    except ValidationError as exc:
        raise BadRequest.from_validation(exc, under=where) from exc
    checked = model.model_dump(exclude_none=True)
    choice = checked.get("choice")
    if choice is not None and choice not in options:
        allowed = ", ".join(repr(option) for option in options) or "none (answer with text)"
        raise BadRequest.naming(f"{where}.choice", f"must be one of the item's options: {allowed}")
    return checked


def example(kind: str) -> str:
    if kind == InboxKind.APPROVAL:
        return '{"decision": "approve"}'
    return '{"text": "…"} or {"choice": "…"}'


def rendered(kind: str, answer: dict[str, Any]) -> str:
    """The answer as the origin process's LLM reads it, after `[inbox answer inb_N]`:
    `approve: looks fine`, `reject`, the text, or the chosen option."""
    if kind == InboxKind.APPROVAL:
        comment = str(answer.get("comment") or "").strip()
        decision = str(answer.get("decision", ""))
        return f"{decision}: {comment}" if comment else decision
    if "choice" in answer:
        return str(answer["choice"])
    return str(answer.get("text", ""))


def answer_from_text(kind: str, options: list[str], text: str) -> dict[str, Any]:
    """An answer typed as one line (the web UI's and the admin's text field): for an
    APPROVAL `approve` or `reject`, then an optional comment; for a QUESTION one of its
    options as the choice, anything else as text. Not checked: see `checked_answer`."""
    text = text.strip()
    if kind == InboxKind.APPROVAL:
        decision, _, comment = text.partition(" ")
        answer: dict[str, Any] = {"decision": decision.lower()}
        return {**answer, "comment": comment.strip()} if comment.strip() else answer
    return {"choice": text} if text in options else {"text": text}
