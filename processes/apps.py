from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "processes"
    label = "processes"
    verbose_name = "Think processes"
