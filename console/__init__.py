"""The ways in, in rooms: cli.py (the `optseq` entry, argparse only) and its commands (commands/, no textual
import), the Textual console (tui/: the app, its screens, widgets and dialogs, `optseq serve`), the plain words both
print (words/), and the benches that measure them (bench/)."""
