"""Installs optseq: the repo's top-level folders as subpackages of `optseq`, and the Cython kernels in native/.

Why a mapping: the folders keep the design card's layout (console/ engine/ native/ state/ configs/), but an
installed optseq claims only the import name `optseq` (optseq.console, optseq.engine, ...). ML repos
often have their own `engine/` or `state/` package, and generic top-level names would shadow them, or be
shadowed by them when a bench runs from the user's working directory.

Directives are set once here. OPTSEQ_CYTHON_CHECKS=1 turns bounds and wraparound checks
back on (the test build); OPTSEQ_NO_NATIVE=1 skips compilation, and the pure-Python twins
are used at run time.
"""
import os

from setuptools import find_namespace_packages, find_packages, setup

ROOTS = ("console", "engine", "native", "state")
# configs/ ships the default plan, the examples and the starter plan `optseq init` writes
DATA_ROOTS = ("configs",)



def _cython_include() -> str:
    """A folder where `cimport optseq.native.X` finds native/X.pxd: the import name the kernels are built under."""
    root = os.path.join("build", "cython-include", "optseq")
    os.makedirs(root, exist_ok=True)
    open(os.path.join(root, "__init__.pxd"), "a").close()
    link = os.path.join(root, "native")
    if not os.path.islink(link):
        os.symlink(os.path.abspath("native"), link)
    return os.path.dirname(root)


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
            Extension(f"optseq.native.{name[:-4]}", [f"native/{name}"], extra_compile_args=["-O3"])
            for name in sources
        ]
        if extensions:
            ext_modules = cythonize(extensions, compiler_directives=directives, include_path=[_cython_include()])

packages = [f"optseq.{name}" for root in ROOTS for name in (root, *(f"{root}.{sub}" for sub in find_packages(root)))]
# the data folders' subfolders too (starter/, examples/NAME/): they hold .py files that ship as data
packages += [f"optseq.{name}" for root in DATA_ROOTS for name in (root, *(f"{root}.{sub}" for sub in
                                                                          find_namespace_packages(root)))]
package_dir = {f"optseq.{root}": root for root in (*ROOTS, *DATA_ROOTS)}

setup(ext_modules=ext_modules, packages=packages, package_dir=package_dir)
