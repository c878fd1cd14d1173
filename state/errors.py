"""Errors every room may raise and the CLI and console turn into one line: the bottom of the house."""


class InputError(Exception):
    """Bad input from the user (unknown lever, candidate, outcome…); str() is the one line shown."""


class UnknownLever(InputError):
    """A lever the plan does not have: bad input wherever it is named (exit 2), where a lever the plan has but
    cannot run now is nothing to run (exit 3)."""
