//===- Artifact.cpp - Loaded artifacts ------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Artifact.h"

#include "qattn/Runtime/CpuArtifact.h"
#include "qattn/Runtime/CudaArtifact.h"
#include "qattn/Runtime/Error.h"

#include "Checks.h"

using namespace qattn::rt;

namespace {
using Loader = std::unique_ptr<Artifact> (*)(Manifest, const LoadOptions &);

struct TargetEntry {
  const char *target;
  Loader load;
};

/// Every target this runtime loads. A new target adds its line here.
const TargetEntry kTargets[] = {
    {"cpu", loadCpuArtifact},
    {"cuda", loadCudaArtifact},
};

void checkTensors(const char *kind, const std::vector<TensorSpec> &specs,
                  const std::vector<Tensor> &tensors,
                  const std::string &function, DimBindings &bindings) {
  checkCount(kind, specs.size(), tensors.size(), function);
  for (size_t i = 0; i < specs.size(); ++i) {
    const Shape &shape = tensors[i].getShape();
    checkTensor(kind, specs[i], tensors[i].getDType(), shape.data(),
                shape.size(), function, bindings);
  }
}
} // namespace

void qattn::rt::checkCount(const char *kind, size_t expected, size_t got,
                           const std::string &function) {
  if (expected != got)
    fail("function \"", function, "\" takes ", expected, " ", kind, "s, got ",
         got);
}

void qattn::rt::checkTensor(const char *kind, const TensorSpec &spec,
                            DType dtype, const int64_t *shape, size_t rank,
                            const std::string &function,
                            DimBindings &bindings) {
  std::string what =
      std::string(kind) + " \"" + spec.name + "\" of function \"" + function +
      "\"";
  if (spec.dtype != dtype || !matchesStaticSizes(spec, shape, rank))
    fail(what, ": expected ", dtypeName(spec.dtype), " ", formatShape(spec),
         ", got ", dtypeName(dtype), " ",
         formatShape(Shape(shape, shape + rank)));
  if (spec.hasSymbols())
    bindSymbols(spec, shape, bindings, what,
                std::string(kind) + " \"" + spec.name + "\"");
}

Function::~Function() = default;

void Function::call(const std::vector<Tensor> &args,
                    std::vector<Tensor> &results) {
  // The arguments bind the symbols; the results' sizes must follow.
  DimBindings bindings;
  checkTensors("argument", spec.args, args, spec.name, bindings);
  checkTensors("result", spec.results, results, spec.name, bindings);
  invoke(args, results, bindings);
}

Artifact::~Artifact() = default;

Function &Artifact::getFunction(std::string_view name) {
  for (std::unique_ptr<Function> &fn : functions)
    if (fn->getSpec().name == name)
      return *fn;
  std::string known;
  for (const FunctionSpec &spec : manifest.functions)
    known += (known.empty() ? "" : ", ") + spec.name;
  fail("the artifact has no function \"", name, "\" (it has: ", known, ")");
}

std::string qattn::rt::knownTargets() {
  std::string names;
  for (const TargetEntry &entry : kTargets)
    names += (names.empty() ? "" : ", ") + std::string(entry.target);
  return names;
}

std::unique_ptr<Artifact>
qattn::rt::loadArtifact(const std::string &directory,
                        const LoadOptions &options) {
  Manifest manifest = loadManifest(directory);
  for (const TargetEntry &entry : kTargets)
    if (manifest.target == entry.target)
      return entry.load(std::move(manifest), options);
  fail(directory, "/manifest.json: target: unknown target \"", manifest.target,
       "\" (this runtime loads: ", knownTargets(), ")");
}
