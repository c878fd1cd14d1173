"""The lever lifecycle: the machine (transitions) built from the plan, its snapshot, staleness, the run index."""
