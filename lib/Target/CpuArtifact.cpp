//===- CpuArtifact.cpp - compile a module to a host shared library --------===//
//
// Part of the qattn project.
//
// Reference pipeline -> LLVM IR -> optimized object for a generic x86-64 (so
// the library also runs on the GPU machine, next to the cubins) -> `cc -shared`.
//
//===----------------------------------------------------------------------===//

#include "UnraisedAttention.h"

#include "qattn/Pipelines/Pipelines.h"
#include "qattn/Target/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::qattn;

// A baseline CPU: artifacts travel between machines of one architecture.
static constexpr const char *kCpu = "x86-64";

static std::unique_ptr<llvm::TargetMachine> createHostTargetMachine(
    Location loc) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    emitError(loc) << "no LLVM target for " << triple.str() << ": " << error;
    return nullptr;
  }
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, kCpu, "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

static void optimize(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, mam);
}

static LogicalResult emitObject(Location loc, llvm::Module &module,
                                llvm::TargetMachine &tm, StringRef path) {
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc) << "cannot write " << path << ": " << ec.message();
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, file.os(), nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return emitError(loc) << "the target cannot emit object files";
  codegen.run(module);
  file.keep();
  return success();
}

static LogicalResult link(Location loc, StringRef linker, StringRef object,
                          StringRef library) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName(linker);
  if (!cc)
    return emitError(loc) << "cannot find the linker driver '" << linker
                          << "' on PATH";
  std::string errorMessage;
  // -Bsymbolic: the _mlir_ciface_ wrappers call the functions they wrap by
  // their plain names, which are exported; without it a function named like a
  // symbol of the C library (`step`, `index`, `time`, ...) would call that
  // instead, through the PLT.
  SmallVector<StringRef> args = {*cc,      "-shared", "-Wl,-Bsymbolic",
                                 "-o",     library,   object,
                                 "-lm"};
  int rc = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0,
                                     &errorMessage);
  if (rc != 0)
    return emitError(loc) << "linking " << library << " failed (exit " << rc
                          << ") " << errorMessage;
  return success();
}

/// Adds to `module` one string constant per function of the manifest, the
/// signature that the runtime compares with the manifest's before any call
/// (a manifest edited to another dtype or shape would have it allocate
/// results that the code overruns).
static void addSignatures(llvm::Module &module,
                          const llvm::json::Array &functions) {
  for (const llvm::json::Value &value : functions) {
    const llvm::json::Object &fn = *value.getAsObject();
    llvm::Constant *text = llvm::ConstantDataArray::getString(
        module.getContext(), getCpuSignature(fn), /*AddNull=*/true);
    auto *global = new llvm::GlobalVariable(
        module, text->getType(), /*isConstant=*/true,
        llvm::GlobalValue::ExternalLinkage, text,
        getCpuSignatureSymbol(*fn.getString("symbol")));
    global->setAlignment(llvm::Align(1));
  }
}

LogicalResult mlir::qattn::emitCpuArtifact(ModuleOp module,
                                           const CpuArtifactOptions &options) {
  Location loc = module.getLoc();
  // Attention left in linalg is refused, or compiled as float code on
  // purpose: the reference pipeline lowers linalg.generic, not linalg.softmax.
  if (failed(options.allowUnquantized ? decomposeSoftmax(module)
                                      : checkAttentionRaised(module)))
    return failure();
  FailureOr<llvm::json::Array> functions = describeFunctions(module);
  if (failed(functions))
    return failure();

  // Names live on in the manifest; LLVM would only warn about them.
  stripNameAttributes(module);

  PassManager pm(module.getContext());
  if (failed(buildReferenceToLLVMPipeline(pm)) || failed(pm.run(module)))
    return failure();

  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  std::unique_ptr<llvm::TargetMachine> tm = createHostTargetMachine(loc);
  if (!tm)
    return failure();
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple());
  optimize(*llvmModule, *tm);
  addSignatures(*llvmModule, *functions);

  if (failed(createArtifactDir(loc, options.outputDir)))
    return failure();
  auto path = [&](StringRef name) {
    SmallString<128> p(options.outputDir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  StringRef dir = options.outputDir;
  if (options.emitLLVMIR &&
      failed(writeArtifactFile(loc, dir, "module.ll", [&](raw_ostream &os) {
        llvmModule->print(os, nullptr);
      })))
    return failure();
  if (failed(emitObject(loc, *llvmModule, *tm, path("module.o"))))
    return failure();
  if (failed(link(loc, options.linker, path("module.o"), path("module.so"))))
    return failure();
  llvm::sys::fs::remove(path("module.o"));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> library =
      llvm::MemoryBuffer::getFile(path("module.so"));
  if (!library)
    return emitError(loc) << "cannot read " << path("module.so") << ": "
                          << library.getError().message();

  return writeManifest(
      loc, dir,
      llvm::json::Object{
          {"target", "cpu"},
          {"library", "module.so"},
          {"library_sha256", getSha256Hex((*library)->getBuffer())}},
      std::move(*functions));
}
