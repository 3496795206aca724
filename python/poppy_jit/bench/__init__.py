"""poppy_jit's benchmark suite: the PopPy/OPAL applications (benches/apps/) on the simulated LLM
service, as sequential Python, under PYTHONPOPPY=1, and hand-parallelised with asyncio.

`python -m poppy_jit.bench [--quick] [--json PATH] [--plot PATH] [--apps a,b]`; see
docs/benchmarks.md. Modules: `ext` (the externals the applications call), `responders` (the
simulator's scripted answers), `child` (one configuration in a fresh interpreter), `harness`
(configurations, sweeps, table, JSON), `charts` (PNG figures).
"""
