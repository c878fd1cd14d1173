"""Opponent bots: EquityBot's pure-Python reference and the switch to its Cython twin."""
