from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "vancetope.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        from vancetope.tenancy.revocation import connect_signals

        connect_signals()
