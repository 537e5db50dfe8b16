// RUN: vortex-opt %s --split-input-file --vortex-gpu-chain-launches -verify-diagnostics
// RUN: not vortex-opt %s --split-input-file --vortex-gpu-chain-launches=chip=gfx90a 2>&1 | FileCheck %s --check-prefix=CHIP

// CHIP: error: vortex-gpu-chain-launches: chip 'gfx90a' is not sm_<number>[suffix]

// expected-error @+1 {{the steps of vortex.manifest are not a dictionary}}
module attributes {vortex.manifest = {steps = [1, 2]}} {
}

// -----

// expected-error @+1 {{step 'indexer' of the manifest is not a dictionary}}
module attributes {vortex.manifest = {steps = {indexer = 3}}} {
}

// -----

// expected-error @+1 {{step 'indexer' of the manifest has no kernels array}}
module attributes {vortex.manifest = {steps = {indexer = {args = []}}}} {
}

// -----

// expected-error @+1 {{launch 1 of step 'indexer' names no kernel}}
module attributes {vortex.manifest = {steps = {
    indexer = {kernels = [{kernel = "k0"}, {grid = {kind = "rows"}}]}}}} {
  gpu.module @kernels {
    gpu.func @k0() kernel {
      gpu.return
    }
  }
}
