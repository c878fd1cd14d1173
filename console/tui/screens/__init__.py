"""Full screens of the console: the main view, the export preview, help."""
