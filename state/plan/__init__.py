"""The plan: its typed model, the TOML loader and its checks, gates, arms, volume and runner settings."""
