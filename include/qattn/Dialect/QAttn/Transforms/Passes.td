//===- Passes.td - qattn dialect transforms ----------------*- tablegen -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_DIALECT_QATTN_TRANSFORMS_PASSES_TD
#define QATTN_DIALECT_QATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def QAttnTile : Pass<"qattn-tile", "mlir::ModuleOp"> {
  let summary = "Choose the GPU tiling of each qattn.attention";
  let description = [{
    Decides how each `qattn.attention` runs on the GPU.

    Decode goes through the tile layer: every attention in the serving form
    (`kv_lens`, a page table or dynamic sizes), and by default (`tile-layer
    = decode`) every static one with at most 16 queries a sequence (16
    int8 queries too, which the prefill kernels would take): decode has one
    GPU path. The tile ops' GPU lowering covers head dims 80 and the
    multiples of 32 to 256; stage-1 blocks of any size (even ones with
    scales per channel); stage-2 groups of 2, 4, 8 keys or multiples of 16;
    2- to 4-bit codes or int8 data (qattn/Target/TileCoverage.h); another
    format is an error naming what it lacks. Decode is
    materialized as a grid of tile programs: an `scf.forall` over (batch, KV
    head, 16-row tile, key split), its CTAs ordered KV head fastest
    (`heads-fastest`; else key split), each loading its query rows
    (`qattn.load_query_tile`), walking its slice of the sequence's keys in
    tiles of 32 keys (16 where the formats or two 8-row blocks ask for it,
    see `tile-keys`) with an `scf.for` whose bounds come from `kv_lens` (or
    the cache's length) (`qattn.load_kv_tile`, `qattn.dequantize_tile`,
    `qattn.tile_scores`, `qattn.softmax_update`; the cache's keys, then the
    int8 tail's) and writing its partial rows, which `qattn.combine_splits`
    merges. The online softmax takes a lazy reference max (`lazy_max`, see
    `lazy-max`). `splits` key splits; when 0, one wave of the grid kernel's
    resident warps: `S = max(1, min(slots / (B Hkv RT), ceil(capacity /
    decode-min-keys-per-split), max(64, ceil(capacity / 256))))`, `slots`
    being `num-sms` times the warps per SM its register budget leaves (12
    at 168 registers, 16 at 128), `capacity` the keys a sequence can hold
    (max pages times the page size, or the cache's length, plus the
    buffer's). Where the batch or the capacity is dynamic, the host computes
    S from them at run time (`arith` ops on `tensor.dim`s: the forall's
    split bound and the scratch tensors' split dimension are dynamic); else
    it folds to a constant. SAS takes one split and two passes over the keys
    (each row's final max, then the terms). The tile layer runs on the CPU
    (`qattn-lower-reference`) and on the GPU (`qattn-convert-to-gpu`, one
    warp per grid point). The serving form needs stage-2 groups and pages
    of multiples of 16 keys (or groups dividing 16); anything else in that
    form is an error.

    The other attentions get `#qattn.gpu_tiling<warps, splits,
    keys_per_step>`. Prefill with BPQ int8 queries (16 or more) and d of 64
    or 128 gets the tensor-core kernel (`kernel = mma`, 4 warps of 16 query
    rows, 2 stages) unless `mma=false`, in its warpgroup form (`kernel =
    wgmma`) unless `wgmma=false`; at d = 64 the warpgroup kernel takes 4
    stages (its overlapped loop). At d = 128 with f16 P.V it takes 8 warps
    (two warpgroups sharing one ring) where that still gives `num-sms` SMs
    two CTAs each and a causal grid has 8192 or more rows; causal ones with
    4096 or more queries take a producer warpgroup beside two that compute
    instead (`producer = warpgroup`, 4 stages). The rest (float-query
    prefill, and decode with `tile-layer = none`) gets the warp kernel
    (`kernel = rows`): one warp per (batch, KV head, query) serving
    all query heads of the group, `warps` warps per CTA, the keys split
    over CTAs (with `splits = 0`, enough to reach `ctas-per-sm` CTAs per SM
    without slices shorter than `min-keys-per-split` keys).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::gpu::GPUDialect",
                           "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"];
  let options = [
    Option<"warps", "warps", "int64_t", /*default=*/"4",
           "Warps per CTA (each serves one query of a KV head's query heads) (default 4)">,
    Option<"splits", "splits", "int64_t", /*default=*/"0",
           "Key splits per row; 0 picks them from the shape (default 0)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The GPU (NVVM chip name) whose limits the heuristics use (default sm_90a)">,
    Option<"numSMs", "num-sms", "int64_t", /*default=*/"0",
           "Streaming multiprocessors the heuristics fill; 0: the chip's "
           "(sm_90a: 132, H100/H200 SXM) (default 0)">,
    Option<"ctasPerSM", "ctas-per-sm", "int64_t", /*default=*/"8",
           "CTAs per SM the split heuristic aims for (default 8)">,
    Option<"minKeysPerSplit", "min-keys-per-split", "int64_t",
           /*default=*/"128", "Shortest key slice worth a CTA (default 128)">,
    Option<"keysPerStep", "keys-per-step", "int64_t", /*default=*/"8",
           "Keys a warp loads before reducing their scores (default 8)">,
    Option<"tileKeys", "tile-keys", "int64_t", /*default=*/"0",
           "Keys per tile of the tile layer, 16 or 32; 0: 32 where every "
           "stage-1 block, page and buffer is a multiple of 32 and every "
           "stage-2 group too, or 16 with one 8-row block of (query, head) "
           "rows, else 16 (default 0)">,
    // -1: 8 ln 2 (terms at most 2^8, the static decode kernel's bar) at
    // every head dim (docs/PERF.md: at d = 128 since the ring's copies
    // stopped holding the kernel back).
    Option<"lazyMax", "lazy-max", "double", /*default=*/"-1",
           "The tile layer's online softmax moves a row's reference max only "
           "when a score passes it by more than this (natural-log units, at "
           "most 10; 0: the running max at every tile; -1: 8 ln 2) "
           "(default -1)">,
    // true: on the H200, one call, two rounds, against split fastest: mixed
    // 2/4-bit B8 N32K 137.4 -> 131.8 us (the widths' CTAs interleave), B8
    // N4K 31.6 -> 30.6, the other rows 0-1% faster, Nq 4 causal 0.8% slower.
    Option<"headsFastest", "heads-fastest", "bool", /*default=*/"true",
           "Order a decode grid's CTAs KV head fastest (the heads of one key "
           "split, which read the same code rows, side by side), else key "
           "split fastest (default true)">,
    Option<"gridWarpsPerSM", "grid-warps-per-sm", "int64_t", /*default=*/"0",
           "Warps per SM of the tile layer's decode grid kernel, 1 to 32: "
           "its register budget (65536 / (32 x this)) and the warps the "
           "split count fills; 0: 16 (128 registers) for 16-key tiles of "
           "one row block, else 12 (168) (default 0)">,
    Option<"balanceSplits", "balance-splits", "bool", /*default=*/"false",
           "Give a decode grid with kv_lens balanced key chunks "
           "(qattn.key_chunk): the batch's keys cut into at most B x S chunks "
           "of one size, a long sequence taking many of the grid's B x S "
           "points and a short one few; else each sequence's keys in S "
           "splits. H200: a varlen batch 1.21x faster, uniform ones 2-11% "
           "slower (docs/PERF.md) (default false)">,
    Option<"tileLayer", "tile-layer", "std::string", /*default=*/"\"decode\"",
           "Which static attentions go through the tile layer: decode (at "
           "most 16 queries a sequence; a format its GPU lowering lacks is "
           "an error), all (every one it can express: the CPU lowering runs "
           "them all) or none (the kernels' tiling: decode on the warp "
           "kernel, for comparisons) (default decode)">,
    // 128: on the H200, since the combine kernel spreads a row's splits over
    // up to 16 warps, B1 Hq32 Hkv8 N32K d128 takes 29.0 us with 256 slices of
    // 128 keys against 34.6 us with 64 of 512, d64 20.8 against 25.0, B8 N4K
    // d128 27.3 us with 32 slices against 33.6 with 8 (docs/PERF.md).
    Option<"decodeMinKeysPerSplit", "decode-min-keys-per-split", "int64_t",
           /*default=*/"128", "Shortest key slice of a decode grid (of the capacity) (default 128)">,
    Option<"useMma", "mma", "bool", /*default=*/"true",
           "Use the tensor-core kernel where it applies (BPQ int8 queries, "
           "16 or more of them) (default true)">,
    // On the H200 at B4 H32 N4K d128: 2133 us against 3193 us with mma.sync;
    // B16 H16 N1K d64: 242 against 282 us (docs/PERF.md).
    Option<"useWgmma", "wgmma", "bool", /*default=*/"true",
           "Of the tensor-core prefill kernels, take the warpgroup (wgmma) "
           "one (default true)">,
    Option<"pvE4m3", "pv-e4m3", "bool", /*default=*/"false",
           "Run the wgmma prefill kernel's P.V on fp8 (e4m3 P and V codes, "
           "twice the f16 tensor rate, relative rounding up to 2^-4 on each) "
           "where V has stage-1 blocks of whole 64-key tiles (default false)">,
  ];
}

def QAttnPipeline : Pass<"qattn-pipeline", "mlir::ModuleOp"> {
  let summary = "Software-pipeline the tile layer's key loops; set the GPU kernels' pipeline depth";
  let description = [{
    Sets `stages` in the `#qattn.gpu_tiling` of every tiled `qattn.attention`
    (run `qattn-tile` first): with 2 stages the warp kernel loads the next
    step's keys and values (into registers) before it reduces the current
    step's scores, so two steps of loads are in flight per warp; the
    prefill tensor-core kernels (`kernel = mma`, `wgmma`) with their 64-key tiles: a ring
    of `stages` shared-memory slots filled by cp.async `stages - 1` tiles
    ahead. Ops without a tiling are an error.

    The tile layer's key loops (`qattn.key_loop`, written by `qattn-tile`)
    are software-pipelined in the IR, `num-stages` deep (2 when 0, at most
    4): the tile loads of the first `num-stages - 1` steps move before the
    loop, each step issues the loads of the step `num-stages - 1` ahead and
    carries the ring of loaded tiles through the loop's iteration
    arguments, and a `qattn.wait_tiles` with `pending = num-stages - 1`
    (the later steps' loads stay in flight) stands before the tiles' first
    use. Loads past the loop's end read
    nothing, so the loop needs no epilogue. With 1 the loops stay as they
    are. A loop that already carries `qattn.pipeline_stages` keeps it:
    `qattn-tile` writes 1 on the decode buffer's loop (at most a page's
    tiles, loaded into registers). With static slots a 2-stage loop is
    then unrolled by 2 (modulo variable expansion; the odd step left in an
    epilogue loop), so that the n-th tile of the loop lies in ring slot
    n mod 2 and each load and wait says which (`qattn.ring_slot`): the GPU
    lowering's ring addresses become constants. `static-slots=auto` does
    so for the loops `qattn-tile` marked `qattn.static_slots` (where both
    K's and V's tiles go through the ring as code rows: stage-2 K under 16
    bytes a lane a key, one 8-row block; measured faster on the H200 there
    and slower elsewhere, docs/PERF.md); `true` and `false` for every
    2-stage loop or none.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
  let options = [
    // qattn-tile's defaults: 1 for the warp kernel (on the H200 two stages
    // measured slower at the reference decode shape, 729 us against 646 us,
    // as the extra registers cost occupancy), 2 for the decode kernel.
    Option<"numStages", "num-stages", "int64_t", /*default=*/"0",
           "Pipeline depth (warp kernel 1 or 2, tensor-core kernels and "
           "tile-layer key loops 1 to 4); 0 keeps the depth qattn-tile chose "
           "(warp 1, decode and prefill 2) and pipelines key loops 2 deep "
           "(default 0)">,
    Option<"staticSlots", "static-slots", "std::string", /*default=*/"\"auto\"",
           "Unroll 2-stage key loops by 2 so that every tile's ring slot is "
           "a constant (qattn.ring_slot on its loads and waits): auto (the "
           "loops qattn-tile marked qattn.static_slots), true or false "
           "(default auto)">,
  ];
}

def QAttnAssignHeadBits : Pass<"qattn-assign-head-bits", "mlir::ModuleOp"> {
  let summary = "Headwise mixed precision: low bits for the heads that quantize best";
  let description = [{
    For every `qattn.progressive_quantize` that carries calibration
    statistics `qattn.head_stats = {gaps = array<f64: ...>, gap_stds =
    array<f64: ...>}` (per KV head: the gap max - min over all channels, and
    the standard deviation of the per-channel gaps), computes each head's
    priority gap x std and gives the `num-low` lowest-priority heads
    `low-bits`, the others `high-bits` (ties keep the lower head index in
    high precision). The op's scheme and codes type change accordingly, and
    so do the `k_stage2` / `v_stage2` of the attention ops that read its
    codes; any other use of the codes is an error (their layout changes).

    The statistics may instead live in a JSON file given as `stats-file`:
    an object whose entries are `{"gaps": [...], "gap_stds": [...]}`, one
    number per KV head; an op then names its entry, `qattn.head_stats =
    "layer0.k"`.
  }];
  let options = [
    Option<"numLow", "num-low", "int64_t", /*default=*/"-1",
           "Heads at low precision (-1: half of them, rounded down) (default -1)">,
    Option<"lowBits", "low-bits", "int64_t", /*default=*/"2", "Low bit width (default 2)">,
    Option<"highBits", "high-bits", "int64_t", /*default=*/"4", "High bit width (default 4)">,
    Option<"statsFile", "stats-file", "std::string", /*default=*/"\"\"",
           "JSON file of calibration statistics that ops name by key (default: "
           "none)">,
  ];
}

def QAttnRaiseAttention : Pass<"qattn-raise-attention", "mlir::ModuleOp"> {
  let summary = "Raise softmax(s Q K^T + M) V written in linalg to quantized qattn ops";
  let description = [{
    Finds attention written in upstream ops on static tensors and replaces it
    by `qattn.quantize` (+ `qattn.progressive_quantize`) of K and V (and of Q
    with `quantize-q`) and one `qattn.attention` with the scheme given by the
    options. Each op of the chain is read in its own rank (2 to 5): its
    result dims are `[batch..., row, col]`, and reshapes
    (`tensor.collapse_shape` / `expand_shape`) that only merge or split the
    leading dims are looked through, since they keep the linear batch index.
    Q, K and V are reshaped into `[B, H, N, d]` (B is Q's first dim when it
    has four, else 1) and the result back into the program's shape; a
    reshape of the result to `[B, H, Nq, d]` takes the attention directly.
    The matcher anchors on the softmax and recognizes:

    * QK^T and P.V: any structured op read through the `LinalgOp` interface
      with one reduced loop — `linalg.generic`, `linalg.batch_matmul` over
      flattened batch and heads, `linalg.matmul` for one head, and their
      generalized forms — indexing `L[batch, row, red]` and
      `R[batch, col, red]` or `R[batch, red, col]`; its body `acc + a * b`,
      optionally times or divided by a constant (the scale folded in), the
      inputs optionally `arith.extf`-widened; its init zeros (`linalg.fill`,
      a zero constant or a `linalg.generic` yielding 0). K (V) may be read
      through `linalg.transpose` or a transposing `linalg.generic` of its
      last two dims, and is quantized before it.
    * Grouped-query attention: K and V repeated to the query heads by a
      broadcast of a new dim just before the last two (`linalg.broadcast`,
      or the equivalent `linalg.generic`, then any leading-dim collapse), or
      by a contraction map that skips that dim (what elementwise fusion
      makes of the broadcast), are quantized before the repeat.
    * The softmax along the last dim: `linalg.softmax`, or decomposed into
      linalg ops as upstream's `transform.structured.decompose_interface`
      and frontends write it: a row max (`maxnumf` / `maximumf`, from -inf,
      the lowest float or NaN), `exp(x - max)`, a row sum (`addf` from 0) and
      a division, which may be fused into the P.V body
      (`acc + (e / s) * v`, as `--linalg-fuse-elementwise-ops` leaves it).
    * Between QK^T and the softmax, any number of elementwise steps (linalg
      ops with identity maps on the scores, named ones such as `linalg.mul`
      and `linalg.add` included, or `arith` ops on whole tensors) that scale
      by positive constants and mask: `addf` of a mask of 0 and -inf (or
      values <= -1e4), `subf` of its negation (`scores - (1 - keep) * 1e4`),
      or `select` between the scores and -inf (<= -1e4).
      Mask values and conditions may come from constants, `linalg.index`,
      `tensor.generate`, iota tensors computed by `linalg.generic`,
      `linalg.broadcast`, reshapes and `arith` ops (comparisons into i1
      tensors included): they are evaluated for every (query, key) pair, and
      the union of the masks must be qattn's causal mask (key `j` visible to
      query `i` iff `j <= i + Nk - Nq`) or nothing. A mask that varies with
      the batch or head, a bias, or another alignment is refused.

    Every chain whose softmax feeds a contraction and that does not match is
    left untouched with a remark saying why, at the op that broke the match
    (a note points at the softmax); with `strict` that remark is an error and
    the pass fails. Dynamic shapes are refused with their reason:
    `qattn.attention` takes static queries, and `qattn.quantize` static K
    and V, so a dynamic batch or key count cannot be quantized here. Every
    intermediate must have no use outside the chain. A raised chain gets a
    remark (`raised to qattn.attention (causal, scale 0.125, Hq 8, Hkv 2)`)
    and counts in the `raised` statistic, as a chain left alone does in
    `left-alone` (statistics need an LLVM built with them enabled). The scale
    becomes the attention's explicit `scale` (1 when there is none).

    Upstream's `--linalg-generalize-named-ops --linalg-fuse-elementwise-ops
    --canonicalize` can move unit dims into the softmax's reshapes (a single
    head of `[Nq, Nk]` scores becomes `[1, 1, Nq, 1, 1, Nk]`); such chains are
    not followed and get a remark.
  }];
  let dependentDialects = ["mlir::qattn::QAttnDialect"];
  let options = [
    Option<"kBits", "k-bits", "int64_t", /*default=*/"4",
           "Key bits: 8 keeps stage-1 int8, 2/3/4 adds stage 2 (default 4)">,
    Option<"vBits", "v-bits", "int64_t", /*default=*/"4",
           "Value bits: 8 keeps stage-1 int8, 2/3/4 adds stage 2 (default 4)">,
    Option<"block", "block", "int64_t", /*default=*/"64",
           "Stage-1 block (tokens per int8 scale) of Q, K and V (default 64)">,
    Option<"group", "group", "int64_t", /*default=*/"16",
           "Stage-2 group (tokens per integer scale and zero point); divides "
           "the block (default 16)">,
    Option<"anchor", "anchor", "std::string", /*default=*/"\"zero\"",
           "Stage-2 grid anchor: zero or min (default zero)">,
    Option<"fit", "fit", "std::string", /*default=*/"\"minmax\"",
           "Stage-2 encoder: minmax or mse (default minmax)">,
    Option<"quantizeQ", "quantize-q", "bool", /*default=*/"false",
           "Quantize Q to stage-1 int8 too (the tensor-core prefill kernel's "
           "input) (default false)">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "Fail on an attention-like softmax that does not match instead "
           "of leaving it with a remark (default false)">,
  ];
  let statistics = [
    Statistic<"numRaised", "raised", "Attention chains raised to qattn.attention">,
    Statistic<"numLeftAlone", "left-alone",
              "Attention-shaped chains left alone (each with a remark)">,
  ];
}

#endif // QATTN_DIALECT_QATTN_TRANSFORMS_PASSES_TD
