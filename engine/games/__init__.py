"""games."""
