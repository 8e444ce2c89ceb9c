"""`manage.py bootstrap`: first-run setup (tenancy, the bundled recipes, a local token).

It lives with the sessions app, the Brain's front, because it puts kernels (tenancy) and apps
(recipes) together; kernels never import apps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from recipes_app.services import sync_bundled_recipes
from recipes_app.strategies import sync_bundled_strategies
from vancetope.tenancy.bootstrap import bootstrap, provision
from vancetope.tenancy.models import Role


class Command(BaseCommand):
    help = (
        "Ensure a default tenant, project (proj_default) and local user; write an API token. "
        "With --tenant and --user: provision that user in that tenant and project instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--token-file",
            default=str(Path(settings.VAR_DIR) / "token"),
            help="where to write the API token for local clients (default var/token)",
        )
        parser.add_argument("--tenant", help="provision in this tenant (made if new)")
        parser.add_argument("--user", help="provision this user (made if new; no password)")
        parser.add_argument(
            "--project",
            help="the tenant's project to join (made if new; default: the tenant's name)",
        )
        kept = "(default: member when new; an existing membership keeps its role)"
        parser.add_argument("--role", choices=Role.values, help=f"the role in the project {kept}")
        parser.add_argument(
            "--tenant-role", choices=Role.values, help=f"the role in the tenant {kept}"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        sync_bundled_recipes()
        sync_bundled_strategies()
        if options["tenant"] or options["user"]:
            self._provision(options)
            return
        result = bootstrap(Path(options["token_file"]))
        self.stdout.write(f"project: {result.project.public_id}")
        if result.new_password:
            self.stdout.write(
                f"admin login (shown once): user {result.username!r}, "
                f"password {result.new_password!r}"
            )
        else:
            # Its password was shown once, at the first run; this is how to get a new one.
            self.stdout.write(
                f"admin user {result.username!r} exists; to set a new password: "
                f".venv/bin/python manage.py changepassword {result.username}"
            )
        state = "written to" if result.token_written else "already valid in"
        self.stdout.write(f"API token {state} {result.token_file}")

    def _provision(self, options: dict[str, Any]) -> None:
        if not (options["tenant"] and options["user"]):
            raise CommandError("--tenant and --user go together")
        try:
            done = provision(
                tenant_name=options["tenant"],
                username=options["user"],
                project_name=options["project"] or "",
                role=options["role"],
                tenant_role=options["tenant_role"],
                token_file=Path(options["token_file"]),
            )
        except ValidationError as refused:
            raise CommandError(refused.messages[0]) from refused
        self.stdout.write(f"project: {done.project.public_id}")
        self.stdout.write(f"created: {', '.join(done.created) or 'nothing (all existed)'}")
        state = "written to" if done.token_written else "already valid in"
        self.stdout.write(f"API token of {done.username!r} {state} {done.token_file}")
