//===- consumer.c - compile a qattn module through the C API --------------===//
//
// Part of the qattn project.
//
// qattn-consumer INPUT.mlir OUTPUT_DIR: what an embedding compiler does with
// an installed qattn (docs/EMBEDDING.md): parse a module, compile it to a CPU
// artifact, report diagnostics.
//
//===----------------------------------------------------------------------===//

#include "qattn-c/QAttn.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>

static void printToStderr(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stderr);
}

static MlirLogicalResult reportDiagnostic(MlirDiagnostic diagnostic,
                                          void *userData) {
  (void)userData;
  mlirDiagnosticPrint(diagnostic, printToStderr, NULL);
  fputc('\n', stderr);
  return mlirLogicalResultSuccess();
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s INPUT.mlir OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  qattnRegisterDialects(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(context, reportDiagnostic, NULL, NULL);
  qattnRegisterPasses();

  int status = 1;
  MlirModule module = mlirModuleCreateParseFromFile(
      context, mlirStringRefCreateFromCString(argv[1]));
  if (!mlirModuleIsNull(module)) {
    if (mlirLogicalResultIsSuccess(qattnEmitArtifact(
            module, mlirStringRefCreateFromCString("cpu"),
            mlirStringRefCreateFromCString(argv[2])))) {
      printf("compiled %s into %s\n", argv[1], argv[2]);
      status = 0;
    }
    mlirModuleDestroy(module);
  }
  mlirContextDestroy(context);
  return status;
}
