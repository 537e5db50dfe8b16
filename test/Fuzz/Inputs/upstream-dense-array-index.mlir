// MLIR 22.1.8's parser crashes on this (llvm/llvm-project#179045, not
// vortex); the fuzz target skips such inputs (tools/vortex-fuzz).
func.func @f() attributes {a = array<index: 1>, b = array< !t>} { return }
