// The vortex dialect loaded into stock mlir-opt through VortexPlugin: parse,
// verify, print, and reparse what was printed (custom and generic forms).
//
// Under ASan (build-asan) stock mlir-opt is uninstrumented: lit runs it with
// the ASan runtime in LD_PRELOAD (test/lit.cfg.py), without which the
// instrumented plugin cannot load.
// UNSUPPORTED: sanitizers && !sanitizer-preload
//
// RUN: mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext %s \
// RUN:   | FileCheck %s
// RUN: mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext %s \
// RUN:   | mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:   | FileCheck %s
// RUN: mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext %s \
// RUN:     --mlir-print-op-generic \
// RUN:   | mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:   | FileCheck %s
//
// The same library is also a pass plugin: it loads alone, and together with
// the dialect plugin.
// RUN: echo 'module {}' \
// RUN:   | mlir-opt --load-pass-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:   | FileCheck %s --check-prefix=PASSPLUGIN
// PASSPLUGIN: module {
// RUN: mlir-opt --load-pass-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:     --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext %s \
// RUN:   | FileCheck %s
//
// It registers the vortex passes with mlir-opt ...
// RUN: mlir-opt --load-pass-plugin=%vortex_libs/VortexPlugin%shlibext --help \
// RUN:   | FileCheck %s --check-prefix=PASSES
// PASSES: --{{[a-z0-9-]*}}vortex{{[a-z0-9-]*}}
//
// ... which run there (passes from a plugin are reached through
// --pass-pipeline) as they do in vortex-opt.
// RUN: mlir-opt --load-pass-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:     --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext %s \
// RUN:     --pass-pipeline='builtin.module(convert-vortex-to-linalg)' \
// RUN:     -o %t.plugin.mlir
// RUN: vortex-opt --convert-vortex-to-linalg %s -o %t.tool.mlir
// RUN: diff %t.plugin.mlir %t.tool.mlir
//
// An invalid vortex op is rejected by the vortex verifier inside mlir-opt.
// RUN: not mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:     %S/Inputs/invalid-op.mlir 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: invalid-op.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'vortex.mean' op dim must be 0, 1 or 2, got 3
//
// So is an invalid vortex type (the type verifier).
// RUN: not mlir-opt --load-dialect-plugin=%vortex_libs/VortexPlugin%shlibext \
// RUN:     %S/Inputs/invalid-type.mlir 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: error: vtensor element type must be {{.*}} got 'i64'
//
// Without the plugin, stock mlir-opt does not know the dialect.
// RUN: not mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: error: {{.*}}unregistered dialect

!kv = !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>
!c = !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>
!cr = !vortex.vtensor<?x1x128xbf16, #vortex.format<ragged>>
!q = !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>
!qm = !vortex.vtensor<?x1x128xbf16, #vortex.format<batched>>
!s = !vortex.vtensor<?x1x1xbf16, #vortex.format<ragged>>
!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>

// CHECK-LABEL: vortex.flow @block_sparse_attention
// CHECK-SAME: config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128, group_size = 8, topk_val = 29
// CHECK-SAME: fields(centroids = [1, 128])
// CHECK: cache(%[[K:.*]]: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, %{{.*}}: !vortex.vtensor<?x16x128xbf16, #vortex.format<paged>>, %[[C:.*]]: !vortex.vtensor<?x1x128xbf16, #vortex.format<paged>>)
// CHECK-NEXT: %[[M:.*]] = vortex.mean %[[K]] {dim = 1 : i64}
// CHECK-NEXT: vortex.write %[[M]] into %[[C]]
// CHECK: indexer(%[[Q:.*]]: !vortex.vtensor<?x8x128xbf16, #vortex.format<batched>>, %[[O:.*]]: !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>
// CHECK-NEXT: %[[QM:.*]] = vortex.mean %[[Q]] {dim = 1 : i64}
// CHECK-NEXT: %[[S:.*]] = vortex.gemm %[[QM]], %{{.*}} :
// CHECK-NEXT: vortex.topk %[[S]] into %[[O]]
vortex.flow @block_sparse_attention
    config = #vortex.config<block_size = 16, page_size = 16, head_dim = 128,
        group_size = 8, topk_val = 29, topk_ratio = 6.250000e-02,
        reserved_bos = 1, reserved_eos = 2, intermediate_dtype = bf16,
        kv_dtype = bf16>
    fields(centroids = [1, 128])
cache(%k: !kv, %v: !kv, %centroids: !c) {
  %m = vortex.mean %k {dim = 1 : i64} : !kv -> !cr
  vortex.write %m into %centroids : !cr into !c
}
indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, %centroids: !c) {
  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !qm
  %s = vortex.gemm %qm, %centroids : (!qm, !c) -> !s
  vortex.topk %s into %o : !s into !o
}
