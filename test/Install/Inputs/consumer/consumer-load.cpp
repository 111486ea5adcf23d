//===- consumer-load.cpp - load an artifact with the installed runtime ----===//
//
// Part of the qattn project.
//
// qattn-consumer-load ARTIFACT_DIR: loads the artifact through
// QAttn::qattn_runtime (dlopen of module.so, one symbol per function) and
// lists its functions.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Artifact.h"

#include <exception>
#include <iostream>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " ARTIFACT_DIR\n";
    return 2;
  }
  try {
    std::unique_ptr<qattn::rt::Artifact> artifact =
        qattn::rt::loadArtifact(argv[1]);
    const qattn::rt::Manifest &manifest = artifact->getManifest();
    std::cout << "target " << manifest.target << "\n";
    for (const qattn::rt::FunctionSpec &spec : manifest.functions) {
      artifact->getFunction(spec.name);
      std::cout << "function " << spec.name << ": " << spec.args.size()
                << " args, " << spec.results.size() << " results\n";
    }
  } catch (const std::exception &e) {
    std::cerr << "qattn-consumer-load: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
