// RUN: rm -rf %t && qattn-compile %s -o %t --target=cuda --no-cubin | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: qattn-run %t --plan-only --function scale --dim B=3 --dim MP=5 | FileCheck %s --check-prefix=PLAN
// RUN: qattn-run %t --plan-only --function sizes --dim B=3 --dim MP=5 | FileCheck %s --check-prefix=SIZES
// RUN: %python -c "import json, sys; print(json.dumps(json.load(open(sys.argv[1]))['functions'][2], indent=1, sort_keys=True))" %t/manifest.json | FileCheck %s --check-prefix=NAMED
// RUN: qattn-run %t --plan-only --function named --dim B=2 --dim MP=5 | FileCheck %s --check-prefix=NAMED-B2
// RUN: qattn-run %t --plan-only --function named --dim B=100 --dim MP=5 | FileCheck %s --check-prefix=NAMED-B100

// Dynamically shaped functions on target cuda, as a GPU lowering leaves
// them: host code at the tensor level that takes views of its buffers,
// allocates scratch by the batch B and the table width MP, and launches
// kernels on grids computed from them. The manifest carries the symbols in
// the shapes, the grids as size expressions, the sizes passed to the
// kernels as {"dim": ...}, and the scratch shapes with symbols; qattn-run
// --plan-only reads it back and evaluates it as the runtime launches it.
// OUT: wrote {{.*}}/manifest.json and the kernels ({{.*}}/module.ptx)

// The first function: scratch sized [B, 8, 1, 64] and [B, MP]; the result
// is the allocation that the launches write (no scratch, no copy).
// CHECK: "args": [
// CHECK: "name": "q",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 8,
// CHECK-NEXT: 1,
// CHECK-NEXT: 64
// CHECK: "name": "table",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: "MP"
// CHECK: "buffers": [
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "f16",
// CHECK-NEXT: "name": "scratch0",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 8,
// CHECK-NEXT: 1,
// CHECK-NEXT: 64
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "dtype": "i32",
// CHECK-NEXT: "name": "scratch1",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",
// CHECK-NEXT: "MP"
// CHECK-NEXT: ]
// CHECK-NEXT: }
// CHECK-NEXT: ],
// Canonicalization folded B*8*64 into B*512.
// CHECK: "launches": [
// CHECK: "grid": [
// CHECK-NEXT: {
// CHECK-NEXT: "ceil_div": [
// CHECK-NEXT: {
// CHECK-NEXT: "mul": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 512
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: 128
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: 1,
// CHECK-NEXT: 1
// CHECK-NEXT: ],
// CHECK-NEXT: "kernel": "scale_rows",
// CHECK-NEXT: "params": [
// CHECK-NEXT: {
// CHECK-NEXT: "arg": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "buffer": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "dim": "B"
// CHECK-NEXT: }
// CHECK-NEXT: ],
// CHECK: "kernel": "first_pages",
// CHECK: "dim": "MP"
// CHECK: "grid": [
// CHECK-NEXT: {
// CHECK-NEXT: "mul": [
// CHECK-NEXT: "B",
// CHECK-NEXT: 8
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK: "kernel": "scale_rows",
// CHECK-NEXT: "params": [
// CHECK-NEXT: {
// CHECK-NEXT: "buffer": 0
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "result": 0
// CHECK-NEXT: },
// CHECK: "name": "scale",
// CHECK: "results": [
// CHECK: "name": "out",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "B",

// The second function is there for its sizes (its launch is never run):
// sums, a sum in a product, flattened products, ceildivsi, index_castui. Its
// static result is the out-param, as before, passed through two views.
// CHECK: "buffers": [],
// CHECK: "grid": [
// CHECK-NEXT: {
// CHECK-NEXT: "ceil_div": [
// CHECK-NEXT: {
// CHECK-NEXT: "mul": [
// CHECK-NEXT: {
// CHECK-NEXT: "add": [
// CHECK-NEXT: "B",
// CHECK-NEXT: "MP"
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: "B",
// CHECK-NEXT: "MP"
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: 64
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "add": [
// CHECK-NEXT: "MP",
// CHECK-NEXT: 1
// CHECK-NEXT: ]
// CHECK-NEXT: },
// CHECK-NEXT: 2
// CHECK-NEXT: ],
// CHECK: "name": "sizes",
// CHECK: "target": "cuda",

// PLAN:      artifact {{.*}} (target cuda), function scale, plan only: nothing is launched
// PLAN-NEXT:   dims B=3, MP=5
// PLAN-NEXT:   arg q: f16 [3, 8, 1, 64]
// PLAN-NEXT:   arg table: i32 [3, 5]
// PLAN-NEXT:   result out: f16 [3, 8, 1, 64]
// PLAN-NEXT:   buffer scratch0: f16 [3, 8, 1, 64], 3072 bytes
// PLAN-NEXT:   buffer scratch1: i32 [3, 5], 60 bytes
// PLAN-NEXT:   launch scale_rows grid [12, 1, 1] = [ceil_div(B*512, 128), 1, 1], block [128, 1, 1], shared 0 B
// PLAN-NEXT:     params q, scratch0, B=3
// PLAN-NEXT:   launch first_pages grid [3, 1, 1] = [B, 1, 1], block [1, 1, 1], shared 0 B
// PLAN-NEXT:     params table, scratch1, MP=5
// PLAN-NEXT:   launch scale_rows grid [24, 1, 1] = [B*8, 1, 1], block [64, 1, 1], shared 0 B
// PLAN-NEXT:     params scratch0, out, B=3
// PLAN-NEXT:   workspace 3328 bytes (a caller's, qattnRtRunWorkspace): buffers at scratch0 +0, scratch1 +3072
// PLAN-NOT: {{.}}

// SIZES:      dims B=3, MP=5
// SIZES-NEXT:   arg table: i32 [3, 5]
// SIZES-NEXT:   result flags: i32 [4]
// SIZES-NEXT:   launch first_pages grid [2, 6, 2] = [ceil_div((B+MP)*B*MP, 64), MP+1, 2], block [32, 1, 1], shared 0 B
// SIZES-NEXT:     params table, flags, MP=5

// The third function computes a split count as qattn-tile does, S =
// max(min(div(1584, B*8), ceil_div(MP*64, 128), 64), 1): a min, a max and a
// division rounded down by a size. S sizes a scratch dimension and is passed
// to a kernel, as are a product (B*MP) and a constant, and a scratch
// dimension is a product (B*8): each becomes a named size, S0 to S3 in the
// order first needed (S is used twice and named once), and grid x, S*2,
// names S0.
// NAMED:      "buffers": [
// NAMED-NEXT:  {
// NAMED-NEXT:   "dtype": "i32",
// NAMED-NEXT:   "name": "scratch0",
// NAMED-NEXT:   "shape": [
// NAMED-NEXT:    "B",
// NAMED-NEXT:    "S0"
// NAMED-NEXT:   ]
// NAMED-NEXT:  },
// NAMED-NEXT:  {
// NAMED-NEXT:   "dtype": "i32",
// NAMED-NEXT:   "name": "scratch1",
// NAMED-NEXT:   "shape": [
// NAMED-NEXT:    "S1",
// NAMED-NEXT:    64
// NAMED-NEXT:   ]
// NAMED-NEXT:  }
// NAMED-NEXT: ],
// NAMED:      "grid": [
// NAMED-NEXT:    {
// NAMED-NEXT:     "mul": [
// NAMED-NEXT:      "S0",
// NAMED-NEXT:      2
// NAMED-NEXT:     ]
// NAMED-NEXT:    },
// NAMED:      "params": [
// NAMED-NEXT:    {
// NAMED-NEXT:     "buffer": 0
// NAMED-NEXT:    },
// NAMED-NEXT:    {
// NAMED-NEXT:     "buffer": 1
// NAMED-NEXT:    },
// NAMED-NEXT:    {
// NAMED-NEXT:     "dim": "S0"
// NAMED-NEXT:    },
// NAMED-NEXT:    {
// NAMED-NEXT:     "dim": "S2"
// NAMED-NEXT:    },
// NAMED-NEXT:    {
// NAMED-NEXT:     "dim": "S3"
// NAMED-NEXT:    }
// NAMED-NEXT:   ]
// NAMED:      "sizes": [
// NAMED-NEXT:  {
// NAMED-NEXT:   "name": "S0",
// NAMED-NEXT:   "size": {
// NAMED-NEXT:    "max": [
// NAMED-NEXT:     {
// NAMED-NEXT:      "min": [
// NAMED-NEXT:       {
// NAMED-NEXT:        "div": [
// NAMED-NEXT:         1584,
// NAMED-NEXT:         {
// NAMED-NEXT:          "mul": [
// NAMED-NEXT:           "B",
// NAMED-NEXT:           8
// NAMED-NEXT:          ]
// NAMED-NEXT:         }
// NAMED-NEXT:        ]
// NAMED-NEXT:       },
// NAMED-NEXT:       {
// NAMED-NEXT:        "ceil_div": [
// NAMED-NEXT:         {
// NAMED-NEXT:          "mul": [
// NAMED-NEXT:           "MP",
// NAMED-NEXT:           64
// NAMED-NEXT:          ]
// NAMED-NEXT:         },
// NAMED-NEXT:         128
// NAMED-NEXT:        ]
// NAMED-NEXT:       },
// NAMED-NEXT:       64
// NAMED-NEXT:      ]
// NAMED-NEXT:     },
// NAMED-NEXT:     1
// NAMED-NEXT:    ]
// NAMED-NEXT:   }
// NAMED-NEXT:  },

// NAMED-B2:      dims B=2, MP=5
// NAMED-B2-NEXT:   arg table: i32 [2, 5]
// NAMED-B2-NEXT:   size S0 = max(min(div(1584, B*8), ceil_div(MP*64, 128), 64), 1) = 3
// NAMED-B2-NEXT:   size S1 = B*8 = 16
// NAMED-B2-NEXT:   size S2 = B*MP = 10
// NAMED-B2-NEXT:   size S3 = 64 = 64
// NAMED-B2-NEXT:   buffer scratch0: i32 [2, 3], 24 bytes
// NAMED-B2-NEXT:   buffer scratch1: i32 [16, 64], 4096 bytes
// NAMED-B2-NEXT:   launch count grid [6, 1, 1] = [S0*2, 1, 1], block [32, 1, 1], shared 0 B
// NAMED-B2-NEXT:     params scratch0, scratch1, S0=3, S2=10, S3=64
// NAMED-B100: size S0 = {{.*}} = 1
// NAMED-B100: buffer scratch0: i32 [100, 1], 400 bytes
// NAMED-B100: launch count grid [2, 1, 1] = [S0*2, 1, 1]

module attributes {gpu.container_module} {
gpu.module @kernels {
  // y = 2 x over `rows` rows of 512 halves. Kernels take bare pointers, so
  // their memrefs are static: the host passes a view of each buffer.
  gpu.func @scale_rows(%x: memref<2147483647xf16>, %y: memref<2147483647xf16>, %rows: i32) kernel {
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %tid = gpu.thread_id x
    %first = arith.muli %bid, %bdim : index
    %i = arith.addi %first, %tid : index
    %c512 = arith.constant 512 : i32
    %n32 = arith.muli %rows, %c512 : i32
    %n = arith.index_cast %n32 : i32 to index
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      %v = memref.load %x[%i] : memref<2147483647xf16>
      %w = arith.addf %v, %v : f16
      memref.store %w, %y[%i] : memref<2147483647xf16>
    }
    gpu.return
  }

  // pages[b] = table[b, 0] for a table of `width` columns: one block per row.
  gpu.func @first_pages(%table: memref<2147483647xi32>, %pages: memref<2147483647xi32>, %width: i32) kernel {
    %b = gpu.block_id x
    %w = arith.index_cast %width : i32 to index
    %at = arith.muli %b, %w : index
    %page = memref.load %table[%at] : memref<2147483647xi32>
    memref.store %page, %pages[%b] : memref<2147483647xi32>
    gpu.return
  }

  gpu.func @count(%x: memref<2147483647xi32>, %y: memref<2147483647xi32>, %s: i32, %n: i32, %c: i32) kernel {
    gpu.return
  }
}

func.func @scale(%q: tensor<?x8x1x64xf16> {qattn.name = "q", qattn.dims = ["B", "", "", ""]},
                 %table: tensor<?x?xi32> {qattn.name = "table", qattn.dims = ["B", "MP"]})
    -> (tensor<?x8x1x64xf16> {qattn.name = "out", qattn.dims = ["B", "", "", ""]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %B = tensor.dim %q, %c0 : tensor<?x8x1x64xf16>
  %MP = tensor.dim %table, %c1 : tensor<?x?xi32>
  %qb = bufferization.to_buffer %q : tensor<?x8x1x64xf16> to memref<?x8x1x64xf16>
  %qc = memref.collapse_shape %qb [[0, 1, 2, 3]] : memref<?x8x1x64xf16> into memref<?xf16>
  %qflat = memref.cast %qc : memref<?xf16> to memref<2147483647xf16>
  %tb = bufferization.to_buffer %table : tensor<?x?xi32> to memref<?x?xi32>
  %tflat = memref.reinterpret_cast %tb to offset: [0], sizes: [2147483647], strides: [1] : memref<?x?xi32> to memref<2147483647xi32>
  %partial = memref.alloc(%B) : memref<?x8x1x64xf16>
  %pflat = memref.reinterpret_cast %partial to offset: [0], sizes: [2147483647], strides: [1] : memref<?x8x1x64xf16> to memref<2147483647xf16>
  %pages = memref.alloc(%B, %MP) : memref<?x?xi32>
  %pgflat = memref.reinterpret_cast %pages to offset: [0], sizes: [2147483647], strides: [1] : memref<?x?xi32> to memref<2147483647xi32>
  %out = memref.alloc(%B) : memref<?x8x1x64xf16>
  %oc = memref.collapse_shape %out [[0, 1, 2, 3]] : memref<?x8x1x64xf16> into memref<?xf16>
  %oflat = memref.cast %oc : memref<?xf16> to memref<2147483647xf16>
  %rows = arith.muli %B, %c8 : index
  %n = arith.muli %rows, %c64 : index
  %blocks = arith.ceildivui %n, %c128 : index
  %b32 = arith.index_cast %B : index to i32
  %mp32 = arith.index_cast %MP : index to i32
  gpu.launch_func @kernels::@scale_rows blocks in (%blocks, %c1, %c1) threads in (%c128, %c1, %c1)
      args(%qflat : memref<2147483647xf16>, %pflat : memref<2147483647xf16>, %b32 : i32)
  gpu.launch_func @kernels::@first_pages blocks in (%B, %c1, %c1) threads in (%c1, %c1, %c1)
      args(%tflat : memref<2147483647xi32>, %pgflat : memref<2147483647xi32>, %mp32 : i32)
  gpu.launch_func @kernels::@scale_rows blocks in (%rows, %c1, %c1) threads in (%c64, %c1, %c1)
      args(%pflat : memref<2147483647xf16>, %oflat : memref<2147483647xf16>, %b32 : i32)
  %r = bufferization.to_tensor %out restrict writable : memref<?x8x1x64xf16> to tensor<?x8x1x64xf16>
  return %r : tensor<?x8x1x64xf16>
}

func.func @sizes(%table: tensor<?x?xi32> {qattn.name = "table", qattn.dims = ["B", "MP"]})
    -> (tensor<4xi32> {qattn.name = "flags"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %B = tensor.dim %table, %c0 : tensor<?x?xi32>
  %MP = tensor.dim %table, %c1 : tensor<?x?xi32>
  %tb = bufferization.to_buffer %table : tensor<?x?xi32> to memref<?x?xi32>
  %tflat = memref.reinterpret_cast %tb to offset: [0], sizes: [2147483647], strides: [1] : memref<?x?xi32> to memref<2147483647xi32>
  %flags = memref.alloc() : memref<4xi32>
  %pairs = memref.expand_shape %flags [[0, 1]] output_shape [2, 2] : memref<4xi32> into memref<2x2xi32>
  %fflat = memref.reinterpret_cast %pairs to offset: [0], sizes: [2147483647], strides: [1] : memref<2x2xi32> to memref<2147483647xi32>
  %sum = arith.addi %B, %MP : index
  %area = arith.muli %B, %MP : index
  %volume = arith.muli %sum, %area : index
  %x = arith.ceildivsi %volume, %c64 : index
  %y = arith.addi %MP, %c1 : index
  %mp32 = arith.index_castui %MP : index to i32
  gpu.launch_func @kernels::@first_pages blocks in (%x, %y, %c2) threads in (%c32, %c1, %c1)
      args(%tflat : memref<2147483647xi32>, %fflat : memref<2147483647xi32>, %mp32 : i32)
  %r = bufferization.to_tensor %flags restrict writable : memref<4xi32> to tensor<4xi32>
  return %r : tensor<4xi32>
}

func.func @named(%table: tensor<?x?xi32> {qattn.name = "table", qattn.dims = ["B", "MP"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1584 = arith.constant 1584 : index
  %c64i = arith.constant 64 : i32
  %B = tensor.dim %table, %c0 : tensor<?x?xi32>
  %MP = tensor.dim %table, %c1 : tensor<?x?xi32>
  %tasks = arith.muli %B, %c8 : index
  %wave = arith.divui %c1584, %tasks : index
  %keys = arith.muli %MP, %c64 : index
  %longest = arith.ceildivui %keys, %c128 : index
  %fit = arith.minui %wave, %longest : index
  %most = arith.minui %fit, %c64 : index
  %S = arith.maxui %most, %c1 : index
  %splits = memref.alloc(%B, %S) : memref<?x?xi32>
  %sflat = memref.reinterpret_cast %splits to offset: [0], sizes: [2147483647], strides: [1] : memref<?x?xi32> to memref<2147483647xi32>
  %rows = memref.alloc(%tasks) : memref<?x64xi32>
  %rflat = memref.reinterpret_cast %rows to offset: [0], sizes: [2147483647], strides: [1] : memref<?x64xi32> to memref<2147483647xi32>
  %x = arith.muli %S, %c2 : index
  %s32 = arith.index_cast %S : index to i32
  %area = arith.muli %B, %MP : index
  %a32 = arith.index_cast %area : index to i32
  gpu.launch_func @kernels::@count blocks in (%x, %c1, %c1) threads in (%c32, %c1, %c1)
      args(%sflat : memref<2147483647xi32>, %rflat : memref<2147483647xi32>, %s32 : i32, %a32 : i32, %c64i : i32)
  return
}
}
