"""The state directory: small hot state in TinyDB, history in append-only journals, short locked transactions."""
