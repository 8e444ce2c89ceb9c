from django.apps import AppConfig


class RecipesConfig(AppConfig):
    name = "recipes_app"
    label = "recipes"
    verbose_name = "Recipes"
