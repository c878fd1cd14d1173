"""Where a lever's command runs and how its output is read: the run protocol, the local process group, Ray Jobs."""
