"""A stand-in lever whose output tries to drive the terminal it is shown on: a window title, a clear screen, the
alternate screen, an OSC 52 clipboard write, NUL bytes and C1 controls, in its plain lines, its progress message,
its env facts and its fail reason (it measures nothing, then fails)."""
import json

NASTY = "\x1b]0;pwned-title\x07\x1b[2J\x1b[?1049h\x1b]52;c;ZXZpbA==\x07\x00\x9b31m\x1bP+q\x1b\\"


def emit(**event):
    print(json.dumps(event), flush=True)


print(f"plain line {NASTY}end-of-plain", flush=True)
emit(event="env", device=f"dev{NASTY}ice")
emit(event="progress", done=0, total=1, msg=f"warming {NASTY}up")
emit(event="fail", reason=f"broken {NASTY}bench")
