//===- capi.c - exercise qattn's C API ------------------------------------===//
//
// Part of the qattn project.
//
// Parses a small qattn module, runs qattn-reference-to-llvm on it and prints
// the result; then the failures (unknown pipeline, unknown target, an output
// directory that cannot exist) must come back as failed results with their
// message through the diagnostic handler.
// Driven by test/Install/capi.test.
//
//===----------------------------------------------------------------------===//

#include "qattn-c/QAttn.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <string.h>

static const char *kModule =
    "func.func @roundtrip(%x: tensor<1x2x37x16xf32>) -> tensor<1x2x37x16xf32> "
    "{\n"
    "  %q, %s = qattn.quantize %x {scheme = #qattn.stage1<block = 16>}\n"
    "      : tensor<1x2x37x16xf32> -> tensor<1x2x37x16xi8>, tensor<1x2x3xf32>\n"
    "  %y = qattn.dequantize %q, %s {scheme = #qattn.stage1<block = 16>}\n"
    "      : tensor<1x2x37x16xi8>, tensor<1x2x3xf32> -> tensor<1x2x37x16xf32>\n"
    "  return %y : tensor<1x2x37x16xf32>\n"
    "}\n";

static void printToFile(MlirStringRef text, void *userData) {
  fwrite(text.data, 1, text.length, (FILE *)userData);
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *userData) {
  (void)userData;
  fputs("diagnostic: ", stdout);
  mlirDiagnosticPrint(diagnostic, printToFile, stdout);
  fputc('\n', stdout);
  return mlirLogicalResultSuccess();
}

static MlirModule parse(MlirContext context) {
  return mlirModuleCreateParse(context, mlirStringRefCreateFromCString(kModule));
}

int main(void) {
  MlirDialectHandle handle = mlirGetDialectHandle__qattn__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(handle);
  printf("dialect: %.*s\n", (int)ns.length, ns.data);

  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  qattnRegisterDialects(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(context, printDiagnostic, NULL, NULL);

  // Twice: registration is idempotent.
  qattnRegisterPasses();
  qattnRegisterPasses();

  MlirModule module = parse(context);
  if (mlirModuleIsNull(module)) {
    puts("parse failed");
    return 1;
  }
  MlirLogicalResult result = qattnRunPipeline(
      module, mlirStringRefCreateFromCString("qattn-reference-to-llvm"));
  printf("qattn-reference-to-llvm: %s\n",
         mlirLogicalResultIsSuccess(result) ? "success" : "failure");
  mlirOperationPrint(mlirModuleGetOperation(module), printToFile, stdout);
  fputc('\n', stdout);
  mlirModuleDestroy(module);

  module = parse(context);
  result = qattnRunPipeline(module,
                            mlirStringRefCreateFromCString("qattn-bogus"));
  printf("qattn-bogus: %s\n",
         mlirLogicalResultIsFailure(result) ? "failure" : "success");
  result = qattnEmitArtifact(module, mlirStringRefCreateFromCString("tpu"),
                             mlirStringRefCreateFromCString("unused"));
  printf("target tpu: %s\n",
         mlirLogicalResultIsFailure(result) ? "failure" : "success");
  // The emitter's own failures come back the same way.
  result = qattnEmitArtifact(module, mlirStringRefCreateFromCString("cpu"),
                             mlirStringRefCreateFromCString("/dev/null/art"));
  printf("target cpu into /dev/null/art: %s\n",
         mlirLogicalResultIsFailure(result) ? "failure" : "success");
  mlirModuleDestroy(module);

  mlirContextDestroy(context);
  puts("done");
  return 0;
}
