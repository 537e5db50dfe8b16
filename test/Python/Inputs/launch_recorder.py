"""A test driver: the ctypes driver's launch path (`CtypesDriver.launch`:
plans packed into parameter arrays) with cuLaunchKernel replaced by a fake
flow's `_launch(func, grid, block, shared, stream, params, pdl)` recorder.
Imports no torch."""

from vortex.runtime import driver


class LaunchRecorder(driver.CtypesDriver):
    def __init__(self, flow):
        self.flow = flow

    def _launch(self, l, stream, params, what):
        self.flow._launch(l.func, l.grid, l.block, l.shared_bytes, stream,
                          params, l.pdl)
