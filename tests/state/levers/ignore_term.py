"""A lever that ignores SIGTERM and hangs: only SIGKILL ends it. Says "ready" once the handler is in place."""
import json
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(json.dumps({"event": "env", "ready": True}), flush=True)
while True:
    time.sleep(60)
