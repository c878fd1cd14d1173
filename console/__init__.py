"""The ways in: the CLI (no textual import) and the Textual console."""
