//===- Artifact.cpp - Loaded artifacts ------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Artifact.h"

#include "qattn/Runtime/CpuArtifact.h"
#include "qattn/Runtime/Error.h"

using namespace qattn::rt;

namespace {
using Loader = std::unique_ptr<Artifact> (*)(Manifest);

struct TargetEntry {
  const char *target;
  Loader load;
};

/// Every target this runtime loads. A new target adds its line here.
const TargetEntry kTargets[] = {
    {"cpu", loadCpuArtifact},
};

void checkTensors(const char *kind, const std::vector<TensorSpec> &specs,
                  const std::vector<Tensor> &tensors,
                  const std::string &function) {
  if (specs.size() != tensors.size())
    fail("function \"", function, "\" takes ", specs.size(), " ", kind,
         "s, got ", tensors.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec &spec = specs[i];
    const Tensor &tensor = tensors[i];
    if (spec.dtype != tensor.getDType() || spec.shape != tensor.getShape())
      fail(kind, " \"", spec.name, "\" of function \"", function,
           "\": expected ", dtypeName(spec.dtype), " ", formatShape(spec.shape),
           ", got ", dtypeName(tensor.getDType()), " ",
           formatShape(tensor.getShape()));
  }
}
} // namespace

Function::~Function() = default;

void Function::call(const std::vector<Tensor> &args,
                    std::vector<Tensor> &results) {
  checkTensors("argument", spec.args, args, spec.name);
  checkTensors("result", spec.results, results, spec.name);
  invoke(args, results);
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
qattn::rt::loadArtifact(const std::string &directory) {
  Manifest manifest = loadManifest(directory);
  for (const TargetEntry &entry : kTargets)
    if (manifest.target == entry.target)
      return entry.load(std::move(manifest));
  fail(directory, "/manifest.json: target: unknown target \"", manifest.target,
       "\" (this runtime loads: ", knownTargets(), ")");
}
