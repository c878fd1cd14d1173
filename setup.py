"""Builds the Cython kernels in native/.

Directives are set once here. OPTSEQ_CYTHON_CHECKS=1 turns bounds and wraparound checks
back on (the test build); OPTSEQ_NO_NATIVE=1 skips compilation, and the pure-Python twins
are used at run time.
"""
import os

from setuptools import setup

ext_modules = []
if os.environ.get("OPTSEQ_NO_NATIVE") != "1":
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:  # no Cython: install still works, the Python twins run
        cythonize = None
    if cythonize is not None:
        checks = os.environ.get("OPTSEQ_CYTHON_CHECKS") == "1"
        directives = {
            "language_level": 3,
            "boundscheck": checks,
            "wraparound": checks,
            "initializedcheck": checks,
            "cdivision": not checks,
        }
        sources = sorted(f for f in os.listdir("native") if f.endswith(".pyx"))
        extensions = [
            Extension(f"native.{name[:-4]}", [f"native/{name}"], extra_compile_args=["-O3"])
            for name in sources
        ]
        if extensions:
            ext_modules = cythonize(extensions, compiler_directives=directives)

setup(ext_modules=ext_modules)
