"""The click CLI. Nothing imports this package."""
