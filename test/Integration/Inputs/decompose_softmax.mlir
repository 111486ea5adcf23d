// Decomposes linalg.softmax into linalg.generic ops (upstream's AggregatedOpInterface), so
// that a plain linalg program compiles through qattn's CPU path as it is written.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %softmax = transform.structured.match ops{["linalg.softmax"]} in %root : (!transform.any_op) -> !transform.any_op
    %parts = transform.structured.decompose_interface %softmax : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
