// RUN: vortex-opt %s --split-input-file --vortex-gpu-chain-launches -verify-diagnostics
// RUN: not vortex-opt %s --split-input-file --vortex-gpu-chain-launches=chip=gfx90a 2>&1 | FileCheck %s --check-prefix=CHIP

// CHIP: error: vortex-gpu-chain-launches: chip 'gfx90a' is not sm_<number>[suffix]

// A manifest in another form (an untyped dictionary, as before the typed
// #vortex.manifest) is refused, not skipped: its launches would go
// unchained.
// expected-error @+1 {{vortex-gpu-chain-launches: vortex.manifest is no #vortex.manifest}}
module attributes {vortex.manifest = {steps = {}}} {
}
