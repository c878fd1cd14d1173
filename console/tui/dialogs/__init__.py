"""Modal dialogs that collect one action's input."""
