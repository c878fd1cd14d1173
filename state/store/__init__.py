"""The state directory: small hot state in TinyDB, history in append-only journals, short locked transactions."""
from optseq.state.store.store import *  # noqa: F401,F403
from optseq.state.store.store import __all__  # noqa: F401
