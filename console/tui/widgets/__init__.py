"""Widgets of the console's main screen."""
