"""Errors every room may raise and the CLI and console turn into one line: the bottom of the house."""


class InputError(Exception):
    """Bad input from the user (unknown lever, candidate, outcome…); str() is the one line shown."""
