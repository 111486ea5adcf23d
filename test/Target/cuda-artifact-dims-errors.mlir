// RUN: rm -rf %t && split-file --leading-lines %s %t
// RUN: not qattn-compile %t/unnamed.mlir -o %t/unnamed --target=cuda --no-cubin 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNNAMED
// RUN: not qattn-compile %t/host.mlir -o %t/host --target=cuda --no-cubin 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HOST
// RUN: not ls %t/host/manifest.json

// What target cuda refuses in a dynamically shaped function: a `?` that
// qattn.dims does not name (as on the CPU), and host sizes that the
// manifest's grammar cannot express (docs/ARTIFACT.md, "Symbolic sizes on
// target cuda"). Each function's first problem is reported, and nothing is
// written.

//--- unnamed.mlir
module attributes {gpu.container_module} {
// UNNAMED: unnamed.mlir:[[@LINE+1]]:1: error: dimension 1 of arg 0 ('tensor<?x?xi32>') is dynamic: name its size in qattn.dims
func.func @unnamed(%table: tensor<?x?xi32> {qattn.dims = ["B", ""]}) -> (tensor<?xi32> {qattn.dims = ["B"]}) {
  %c0 = arith.constant 0 : index
  %B = tensor.dim %table, %c0 : tensor<?x?xi32>
  %out = tensor.empty(%B) : tensor<?xi32>
  return %out : tensor<?xi32>
}
}

//--- host.mlir
module attributes {gpu.container_module} {
gpu.module @kernels {
  gpu.func @rows(%x: memref<2147483647xi32>, %y: memref<2147483647xi32>, %n: i32) kernel {
    gpu.return
  }
  gpu.func @grid() kernel {
    gpu.return
  }
  gpu.func @one(%x: memref<2147483647xi32>) kernel {
    gpu.return
  }
  gpu.func @shifted(%x: memref<2147483647xi32, strided<[1], offset: 64>>) kernel {
    gpu.return
  }
  gpu.func @count(%n: i32) kernel {
    gpu.return
  }
}

// HOST: host.mlir:[[@LINE+8]]:3: error: 'gpu.launch_func' op grid x is computed by 'arith.remui', which no manifest size expresses (a size is a positive integer, a dimension of an argument or a result (memref.dim), or arith.muli, arith.addi, arith.divui/divsi, arith.minui/minsi, arith.maxui/maxsi, and arith.ceildivui/ceildivsi by a positive constant of sizes)
// HOST: host.mlir:[[@LINE+6]]:8: note: computed here
func.func @grid_remui(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %B = tensor.dim %t, %c0 : tensor<?x?xi32>
  %x = arith.remui %B, %c8 : index
  gpu.launch_func @kernels::@grid blocks in (%x, %c1, %c1) threads in (%c1, %c1, %c1)
  return
}

// HOST: host.mlir:[[@LINE+7]]:3: error: 'gpu.launch_func' op grid y is computed by 'arith.ceildivui', whose divisor is not a positive constant
// HOST: host.mlir:[[@LINE+5]]:8: note: computed here
func.func @ceil_div_by_symbol(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %B = tensor.dim %t, %c0 : tensor<?x?xi32>
  %y = arith.ceildivui %c1, %B : index
  gpu.launch_func @kernels::@grid blocks in (%c1, %y, %c1) threads in (%c1, %c1, %c1)
  return
}

// A size read from memory: the load itself is no host op of a manifest.
// HOST: host.mlir:[[@LINE+5]]:8: error: 'memref.load' op cannot be expressed in a cuda artifact's manifest (the host side may only allocate buffers and launch kernels)
func.func @grid_loaded(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tb = bufferization.to_buffer %t : tensor<?x?xi32> to memref<?x?xi32>
  %v = memref.load %tb[%c0, %c0] : memref<?x?xi32>
  %x = arith.index_cast %v : i32 to index
  gpu.launch_func @kernels::@grid blocks in (%x, %c1, %c1) threads in (%c1, %c1, %c1)
  return
}

// A size nested in an expressible one is reported where it is computed.
// HOST: host.mlir:[[@LINE+10]]:3: error: 'gpu.launch_func' op kernel operand 0 is computed by 'arith.subi', which no manifest size expresses
// HOST: host.mlir:[[@LINE+6]]:8: note: computed here
func.func @param_subi(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %B = tensor.dim %t, %c0 : tensor<?x?xi32>
  %MP = tensor.dim %t, %c1 : tensor<?x?xi32>
  %d = arith.subi %MP, %c1 : index
  %m = arith.maxui %B, %d : index
  %m32 = arith.index_cast %m : index to i32
  gpu.launch_func @kernels::@count blocks in (%B, %c1, %c1) threads in (%c1, %c1, %c1)
      args(%m32 : i32)
  return
}

// The result is allocated by the table's width, not its batch.
// HOST: host.mlir:[[@LINE+6]]:10: error: 'memref.alloc' op allocates result 0 with shape [MP, 8], but the result's shape is [B, 8]
func.func @result_shape(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) -> (tensor<?x8xi32> {qattn.dims = ["B", ""]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %B = tensor.dim %t, %c0 : tensor<?x?xi32>
  %MP = tensor.dim %t, %c1 : tensor<?x?xi32>
  %out = memref.alloc(%MP) : memref<?x8xi32>
  %oflat = memref.reinterpret_cast %out to offset: [0], sizes: [2147483647], strides: [1] : memref<?x8xi32> to memref<2147483647xi32>
  gpu.launch_func @kernels::@one blocks in (%B, %c1, %c1) threads in (%c1, %c1, %c1)
      args(%oflat : memref<2147483647xi32>)
  %r = bufferization.to_tensor %out restrict writable : memref<?x8xi32> to tensor<?x8xi32>
  return %r : tensor<?x8xi32>
}

// HOST: host.mlir:[[@LINE+5]]:8: error: 'memref.reinterpret_cast' op views a buffer at an offset other than 0, which a kernel parameter cannot pass
func.func @offset_view(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : i32
  %tb = bufferization.to_buffer %t : tensor<?x?xi32> to memref<?x?xi32>
  %v = memref.reinterpret_cast %tb to offset: [64], sizes: [2147483647], strides: [1] : memref<?x?xi32> to memref<2147483647xi32, strided<[1], offset: 64>>
  gpu.launch_func @kernels::@shifted blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
      args(%v : memref<2147483647xi32, strided<[1], offset: 64>>)
  return
}

// Returning an argument: buffer-results-to-out-params copies it into the
// result, and a manifest has no copies.
// HOST: host.mlir:[[@LINE+3]]:3: error: 'memref.copy' op copies between buffers, which a cuda artifact's manifest cannot express
// HOST-NOT: error:
func.func @returns_argument(%t: tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) -> (tensor<?x?xi32> {qattn.dims = ["B", "MP"]}) {
  return %t : tensor<?x?xi32>
}
}
