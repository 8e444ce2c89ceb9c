"""The operators' view of settings: values by key and scope, set through the same checks as
the API (the key's type, the scope's tenant) and raising the revision. Secrets are
write-only: the list shows "***", and the form never shows a stored secret (left empty, the
stored one is kept)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from vancetope.config import services
from vancetope.config.models import Setting
from vancetope.config.registry import SettingRefused, all_keys, get_key
from vancetope.errors import NotFound

MASK = "***"


class SettingForm(forms.ModelForm):
    key = forms.ChoiceField()
    value = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='JSON (a string in quotes: "gpt-4o"). A secret key\'s stored value is never '
        "shown: leave empty to keep it.",
    )

    class Meta:
        model = Setting
        fields = ("key", "scope", "scope_id", "value")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice: Any = self.fields["key"]
        choice.choices = [(key.name, key.name) for key in sorted(all_keys(), key=_name)]
        row = self.instance
        if row.pk is not None:
            key = _known(row.key)
            self.initial["value"] = "" if key is None or key.secret else json.dumps(row.value)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        key = get_key(data["key"])
        text = str(data.get("value") or "").strip()
        row = self.instance
        same_place = (row.key, row.scope, row.scope_id) == (
            key.name,
            data["scope"],
            data["scope_id"],
        )
        if not text and key.secret and row.pk is not None and same_place:
            data["keep_secret"] = True
        else:
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError({"value": f"not JSON: {exc.msg}"}) from exc
            try:
                data["value"] = key.validate(value)
            except SettingRefused as refused:
                raise forms.ValidationError({"value": refused.message}) from refused
        try:
            data["chain"] = services.chain_of(data["scope"], data["scope_id"])
        except NotFound as missing:
            raise forms.ValidationError({"scope_id": missing.message}) from missing
        return data


def _name(key: Any) -> str:
    return str(key.name)


def _known(name: str) -> Any:
    try:
        return get_key(name)
    except SettingRefused:
        return None


@admin.register(Setting)
class SettingAdmin(admin.ModelAdmin):
    form = SettingForm
    list_display = ("key", "scope", "scope_id", "tenant", "shown_value", "updated_at", "updated_by")
    list_filter = ("scope", "key")
    search_fields = ("key",)

    @admin.display(description="value")
    def shown_value(self, row: Setting) -> str:
        key = _known(row.key)
        return MASK if key is None or key.secret else json.dumps(row.value)

    def save_model(self, request: HttpRequest, obj: Setting, form: Any, change: bool) -> None:
        data = form.cleaned_data
        key = get_key(data["key"])
        if change and (obj.key, obj.scope, obj.scope_id) != (
            form.initial.get("key"),
            form.initial.get("scope"),
            form.initial.get("scope_id"),
        ):
            services.do_unset(form.initial["key"], form.initial["scope"], form.initial["scope_id"])
        if data.get("keep_secret"):
            return
        saved = services.do_set(
            key,
            data["scope"],
            data["scope_id"],
            data["chain"].tenant_id,
            data["value"],
            by=request.user,
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Setting) -> None:
        services.do_unset(obj.key, obj.scope, obj.scope_id)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for row in queryset:
            self.delete_model(request, row)
