"""`manage.py bootstrap`: first-run setup (tenancy, the bundled recipes, a local token).

It lives with the sessions app, the Brain's front, because it puts kernels (tenancy) and apps
(recipes) together; kernels never import apps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from recipes_app.services import sync_bundled_recipes
from recipes_app.strategies import sync_bundled_strategies
from vancetope.tenancy.bootstrap import bootstrap


class Command(BaseCommand):
    help = "Ensure a default tenant, project (proj_default) and local user; write an API token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--token-file",
            default=str(Path(settings.VAR_DIR) / "token"),
            help="where to write the API token for local clients (default var/token)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        sync_bundled_recipes()
        sync_bundled_strategies()
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
