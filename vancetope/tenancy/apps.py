from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "vancetope.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"
