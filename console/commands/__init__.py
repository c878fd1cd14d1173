"""The CLI's commands, one `*_cmd.py` each, and what only they use: where the store is (store_cmd), lines fitted to
the terminal (fit), the streams a lever cannot drive the terminal through (safe_stream). No textual: console/cli.py
loads one of them per command, and only the console's own door (console/tui/launch.py) loads textual."""
