"""The one place that imports Hypothesis, so that `import poppy_jit` (and the prelude of generated
programs) never needs it; a clear error when it is missing."""
try:
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "poppy_jit.fuzz generates programs with Hypothesis, which is not installed: "
        "`python -m pip install hypothesis`") from exc

__all__ = ["HealthCheck", "Phase", "given", "seed", "settings", "strategies"]
