"""The compiler driver: `driver` finds and runs `vortex-compile` and
`vortex-opt` (artifacts and manifest, cached by content); `sweep` traces,
verifies and lowers a flow over a sweep of configs (`python -m vortex
verify`). The tracer itself is `vortex.frontend`.

This `__init__` imports nothing: `driver` is a leaf that the front end and
the runtimes import, `sweep` sits on top of `vortex.api`.
"""
