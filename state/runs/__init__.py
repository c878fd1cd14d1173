"""A lever run: the pass loop, pair accounting, the sequential statistics, the decision rule, best of N."""
