"""The compiled runtime, `poppy_jit._core`, imported on first use and held in one place.

Plain mode never imports it (`import poppy_jit` with PYTHONPOPPY unset loads only the
decorators). The decorators, the warnings, the config and the diagnosis of waits all reach the
runtime through this module, which imports nothing of the package, so none of them imports
another just to find the runtime.
"""
import importlib

core = None  # the compiled module once imported

# Sections that modules above the decorators add to `poppy_jit.stats()` while they are on (the
# diagnosis of waits adds "waits"): name -> a function giving the section's value. They
# register here, so the decorators need not import them.
stats_sections: dict = {}


def load():
    """The compiled module, imported now if it was not yet; a clear ImportError if it is missing."""
    global core
    if core is None:
        try:
            loaded = importlib.import_module(__package__ + "._core")
        except ImportError as exc:
            raise ImportError(
                "poppy_jit._core (the compiled runtime) is not available: build and install the "
                "package with `pip install .` (or `maturin develop --release`). "
                f"Original error: {exc}") from exc
        core = loaded
    return core
