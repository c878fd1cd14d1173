"""The plan's state written back as the markdown doc: document, tables, Mermaid, charts, labels, the target file."""
