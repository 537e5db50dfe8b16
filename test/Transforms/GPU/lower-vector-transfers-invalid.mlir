// RUN: vortex-opt %s --split-input-file --vortex-gpu-lower-vector-transfers --verify-diagnostics

// Kernels work on buffers: a transfer on a tensor is rejected.
func.func @on_tensor(%t: tensor<?xf32>, %i: index) -> vector<4xf32> {
  %pad = arith.constant 0.0 : f32
  // expected-error @+1 {{'vector.transfer_read' op on a tensor cannot be lowered in a kernel: bufferize first}}
  %r = vector.transfer_read %t[%i], %pad : tensor<?xf32>, vector<4xf32>
  return %r : vector<4xf32>
}

// -----

func.func @write_tensor(%t: tensor<?xf32>, %v: vector<4xf32>, %i: index) -> tensor<?xf32> {
  // expected-error @+1 {{'vector.transfer_write' op on a tensor cannot be lowered in a kernel: bufferize first}}
  %r = vector.transfer_write %v, %t[%i] : vector<4xf32>, tensor<?xf32>
  return %r : tensor<?xf32>
}
