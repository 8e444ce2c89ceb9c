"""The built-in engines, one module each; every module registers its engine on import."""
