from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "vancetope.memory"
    label = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from vancetope.memory import tools  # noqa: F401  (the memory_* server tools register)
        from vancetope.memory.vectors import load_sqlite_vec_on_connect

        load_sqlite_vec_on_connect()
