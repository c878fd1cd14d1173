"""Cython kernels. Import through engine.bots.backend, which falls back to the Python twins."""
