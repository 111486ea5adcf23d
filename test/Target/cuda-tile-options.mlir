// RUN: rm -rf %t && qattn-compile %s -o %t/default --target=cuda --no-cubin > /dev/null
// RUN: qattn-run %t/default --plan-only --function paged --dim B=8 --dim NP=600 --dim MP=64 | FileCheck %s --check-prefix=DEFAULT
// RUN: qattn-compile %s -o %t/five --target=cuda --no-cubin --tile-options="splits=5" > /dev/null
// RUN: qattn-run %t/five --plan-only --function paged --dim B=8 --dim NP=600 --dim MP=64 | FileCheck %s --check-prefix=FIVE
// RUN: qattn-compile %s -o %t/splitfast --target=cuda --no-cubin --tile-options="splits=5 heads-fastest=false" > /dev/null
// RUN: qattn-run %t/splitfast --plan-only --function paged --dim B=8 --dim NP=600 --dim MP=64 | FileCheck %s --check-prefix=SPLITFAST
// RUN: not qattn-compile %s -o %t/bad --target=cuda --no-cubin --tile-options="bogus=1" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: test ! -e %t/bad
// RUN: not qattn-compile %s -o %t/cpu --tile-options="splits=2" 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: qattn-compile %s -o %t/three --target=cuda --no-cubin --pipeline-options="num-stages=3" > /dev/null
// RUN: FileCheck %s --check-prefix=THREE < %t/three/module.ptx
// RUN: FileCheck %s --check-prefix=TWO < %t/default/module.ptx
// RUN: not qattn-compile %s -o %t/badp --target=cuda --no-cubin --pipeline-options="depth=3" 2>&1 | FileCheck %s --check-prefix=BADP
// RUN: not qattn-compile %s -o %t/cpup --pipeline-options="num-stages=3" 2>&1 | FileCheck %s --check-prefix=CPUP

// qattn-compile --tile-options passes more options to qattn-tile, for
// experiments with its heuristics: the decode grid's key splits from the
// batch at launch (S0) by default, 5 with splits=5 (the KV heads of a split
// side by side on grid x); a bad option is an error
// before anything is written, and so is the option for the cpu target.
// DEFAULT: launch paged_decode_tiles grid [{{[0-9]+}}, 1, 8] = [S0*2, 1, B]
// FIVE: launch paged_decode_tiles grid [10, 1, 8] = [10, 1, B]
// SPLITFAST: launch paged_decode_tiles grid [5, 2, 8] = [5, 2, B]
// BAD: no such option bogus
// BAD: qattn-compile: error: --tile-options='bogus=1' are not options of qattn-tile (qattn-opt --help lists them)
// CPU: qattn-compile: error: --tile-options is for --target=cuda
// --pipeline-options likewise passes options to qattn-pipeline: three stages
// keep two later tiles' copies in flight where two keep one.
// THREE: cp.async.wait_group 4;
// TWO-NOT: cp.async.wait_group 4;
// TWO: cp.async.wait_group 2;
// BADP: qattn-compile: error: --pipeline-options='depth=3' are not options of qattn-pipeline (qattn-opt --help lists them)
// CPUP: qattn-compile: error: --pipeline-options is for --target=cuda
func.func @paged(%q: tensor<?x8x1x64xf16> {qattn.dims = ["B", "", "", ""]},
                  %kp: tensor<?x64x64xi8> {qattn.dims = ["NP", "", ""]},
                  %ks: tensor<?x2x1xf32> {qattn.dims = ["NP", "", ""]},
                  %ks2: tensor<?x2x4x64xi8> {qattn.dims = ["NP", "", "", ""]},
                  %kz2: tensor<?x2x4x64xi8> {qattn.dims = ["NP", "", "", ""]},
                  %lens: tensor<?xi32> {qattn.dims = ["B"]},
                  %table: tensor<?x?xi32> {qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf16> {qattn.dims = ["B", "", "", ""]}) {
  %o = qattn.attention %q keys(%kp, %ks, %ks2, %kz2) values(%kp, %ks, %ks2, %kz2) lengths(%lens) pages(%table)
      {k_stage1 = #qattn.stage1<block = 64>, k_stage2 = #qattn.stage2<bits = [4], group = 16>, v_stage1 = #qattn.stage1<block = 64>, v_stage2 = #qattn.stage2<bits = [4], group = 16>}
      : (tensor<?x8x1x64xf16>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?x64x64xi8>, tensor<?x2x1xf32>, tensor<?x2x4x64xi8>, tensor<?x2x4x64xi8>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8x1x64xf16>
  return %o : tensor<?x8x1x64xf16>
}
