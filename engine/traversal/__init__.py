"""traversal."""
