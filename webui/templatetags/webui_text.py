"""Template filters of the web UI's text: `markdown` renders a model's or a person's Markdown
as sanitised HTML (webui/conversation.py)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from webui.conversation import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str | None) -> SafeString:
    return render_markdown(text or "")
