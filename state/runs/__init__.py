"""A lever run: the protocol read from its output, pair accounting, statistics, the decision rule, simulation."""
