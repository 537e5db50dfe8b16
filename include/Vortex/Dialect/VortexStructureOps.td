//===- VortexStructureOps.td - Kernels and lane masks -------*- tablegen -*-===//
//
// Ops that passes introduce: fused kernels (vortex-fuse) and the explicit
// lane masks of padded tensors (vortex-mask-padding).
//
//===----------------------------------------------------------------------===//

#ifndef VORTEX_DIALECT_VORTEXSTRUCTUREOPS_TD
#define VORTEX_DIALECT_VORTEXSTRUCTUREOPS_TD


def Vortex_KernelOp : Vortex_Op<"kernel", [
    SingleBlockImplicitTerminator<"YieldOp">,
    DeclareOpInterfaceMethods<Vortex_ScheduledOpInterface, ["getSchedule"]>]> {
  let summary = "a fused workload kernel: W ops that run as one kernel";
  let description = [{
    Produced by `vortex-fuse`: the workload-fused (W) ops of one vortex_torch
    fusion group, in program order. Values the rest of the flow uses are
    yielded; intermediates stay inside (in registers on the GPU). The
    region is not isolated: it reads the flow's values directly.

    ```mlir
    %score = vortex.kernel -> !s {
      %a = vortex.multiply %q, %max : (!q, !e) -> !sh
      ...
      vortex.yield %agg : !s
    }
    ```
  }];
  let results = (outs Variadic<Vortex_AnyVTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` type($results)^)? $body attr-dict";
  let hasVerifier = 1;
}

def Vortex_YieldOp : Vortex_Op<"yield", [Pure, Terminator,
    HasParent<"KernelOp">]> {
  let summary = "the values a fused kernel hands to the rest of the flow";
  let description = [{
    Terminates a `vortex.kernel`; its operands become the kernel's results.

    ```mlir
    vortex.yield %score : !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
    ```
  }];
  let arguments = (ins Variadic<Vortex_AnyVTensor>:$values);
  let builders = [OpBuilder<(ins), [{ /* empty */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let hasVerifier = 1;
}

def Vortex_MaskLanesOp : Vortex_WOp<"mask_lanes", [Pure]> {
  let summary = "padded lanes take a value: the explicit mask of padding";
  let description = [{
    Identity on the real lanes `[0, D0) x [0, D1)` of an explicitly padded
    tensor; every padded lane (at or beyond the real extent of D0 or D1)
    holds `value`, the neutral element of the consumer: 0 for sum, mean,
    l2norm and contractions, -inf for max, +inf for min. Inserted by
    `vortex-mask-padding` in front of each reduction or contraction over a
    padded axis.

    ```mlir
    %m = vortex.mask_lanes %s {value = 0xFF800000 : f32}
        : !vortex.vtensor<?x5x1xbf16, #vortex.format<ragged>, padded = [8, 1]>
        -> !vortex.vtensor<?x5x1xbf16, #vortex.format<ragged>, padded = [8, 1]>
    ```
  }];
  let arguments = (ins Vortex_FloatVTensor:$input, F32Attr:$value);
  let results = (outs Vortex_FloatVTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

#endif // VORTEX_DIALECT_VORTEXSTRUCTUREOPS_TD
