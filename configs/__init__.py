"""Plans shipped with optseq: the default (sequencing.toml), examples/, and starter/ (what `optseq init` writes).

A package only so importlib.resources can read them from an install; nothing here is imported.
"""
