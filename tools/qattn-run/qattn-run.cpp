//===- qattn-run.cpp - Run a function of a qattn artifact -----------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Loads an artifact directory, feeds one of its functions with arguments
// from .npy files or seeded random data, runs it, and compares its results
// with the float64 reference its manifest names. docs/RUNNING.md is the
// user's guide; --help the summary.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Artifact.h"
#include "qattn/Runtime/CudaArtifact.h"
#include "qattn/Runtime/Dims.h"
#include "qattn/Runtime/Error.h"
#include "qattn/Runtime/LaunchPlan.h"
#include "qattn/Runtime/Metrics.h"
#include "qattn/Runtime/Npy.h"
#include "qattn/Runtime/Random.h"
#include "qattn/Runtime/Reference.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <new>
#include <optional>

using namespace qattn::rt;

namespace {
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitCheckFailed = 2;

constexpr const char *kHelp = R"(usage: qattn-run ARTIFACT_DIR [options]
       qattn-run ARTIFACT_DIR --plan-only [--function NAME] [--input ...]
                 [--dim ...]
       qattn-run --list-devices

Runs a function of a qattn artifact (a directory with manifest.json, see
docs/ARTIFACT.md) and checks its results against the float64 reference that
the manifest names.

Options:
  --function NAME        the function to run; may be left out when the
                         artifact has only one
  --input NAME=FILE.npy  take argument NAME from a .npy file (repeatable).
                         The file's shape must equal the argument's. Its
                         dtype must match too (bf16 as <u2 bit patterns,
                         i8 as |i1 or |u1), except that a float argument
                         also accepts <f8 and <f4 files, which are rounded
                         to the argument's dtype (to nearest even)
  --random NAME=DIST     generate float argument NAME from DIST (repeatable)
  --dim SYM=N            bind the size symbol SYM of the function's shapes
                         to N >= 1 (repeatable), for generated arguments;
                         arguments from files bind their symbols themselves
  --dist DIST            distribution of the other generated arguments
                         (default: normal)
  --seed N               seed of the generated data (default: 0); argument i
                         gets its own stream derived from N and i
  --output-dir DIR       write each result to DIR/<result>.npy and each
                         generated argument to DIR/<argument>.npy
  --max-rel-error X      fail if a result's rel_fro exceeds X
  --min-sqnr DB          fail if a result's SQNR is below DB decibels
  --repeat N             time N runs: cpu, the median wall time of a
                         call; cuda, the median and minimum kernel time
                         (CUDA events around each run's launches, after 3
                         warm-up runs), in microseconds
  --cold-l2              cuda, with --repeat: flush the L2 cache (a 256 MiB
                         memset, not timed) before every timed run
  --device N             cuda: run on device N (default: 0)
  --verbose              describe loading and launching on stderr (cuda:
                         driver, device, module image or PTX fallback,
                         kernel attributes; waits after each kernel, so
                         that a fault names it)
  --quiet                print only result, time and FAIL lines
  --plan-only            cuda: print what a call at the bound sizes would
                         launch (dims, shapes, scratch buffers, each
                         launch's grid and parameters) without loading the
                         module or the driver, and exit; --input files and
                         --dim bind the symbols, nothing is generated or
                         run, and no GPU is needed
  --list-devices         print the CUDA driver and devices, then exit
  --help                 print this help (--help-hidden: the same; qattn-run
                         has no hidden options)

Arguments without --input get seeded random data; integer arguments have no
generator and must be given with --input. A shape may name sizes by symbols
("shape": ["B", 8]): files bind them, --dim gives the others, and every
occurrence of a symbol must have the one size. Distributions:
  normal   mean 0, standard deviation 1
  uniform  uniform in [-1, 1)
  outlier  normal, then max(1, C/8) seeded channels of the last axis (C
           channels) are multiplied by 10 and shifted by an offset uniform in
           [-5, 5) per channel, like the outlier channels of real K caches

Results are filled with NaN (floats) or 0x5A bytes (integers) before the
call (cuda: the device memory of results and scratch buffers with 0xFF
bytes, NaN for floats); a float result that still holds NaN afterwards
fails the run. Each result with a reference gets a line
  result NAME vs SOURCE: max_abs=A rel_fro=R sqnr=S dB
with max_abs = max|O-R|, rel_fro = ||O-R|| / ||R|| (Frobenius) and
sqnr = 10 log10(sum R^2 / sum (O-R)^2), "inf" for an exact result.

Exit status: 0 success; 1 usage, input or load error (reported as
"qattn-run: error: ..." on stderr); 2 a result holds NaN, an error metric
is NaN, or a result violates --max-rel-error or --min-sqnr (reported as
"FAIL: ..." on stdout).
)";

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

struct Options {
  std::string artifactDir;
  std::optional<std::string> function;
  std::map<std::string, std::string> inputs;
  std::map<std::string, Distribution> distributions;
  std::map<std::string, int64_t> dims;
  Distribution defaultDistribution = Distribution::Normal;
  uint64_t seed = 0;
  std::optional<std::string> outputDir;
  std::optional<double> maxRelError;
  std::optional<double> minSqnr;
  std::optional<uint64_t> repeat;
  int device = 0;
  bool quiet = false;
  bool verbose = false;
  bool coldL2 = false;
  bool listDevices = false;
  bool planOnly = false;
  bool help = false;
};

/// Warm-up runs before cuda timing: the first launches pay for module and
/// cache warm-up that the timed runs should not see.
constexpr unsigned kCudaWarmups = 3;

[[noreturn]] void usageError(const std::string &what) {
  fail(what, " (see qattn-run --help)");
}

uint64_t parseCount(const std::string &text, const char *option) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit((unsigned char)text[0]) || *end ||
      errno == ERANGE)
    usageError(std::string(option) + " expects a non-negative integer, got \"" +
               text + "\"");
  return value;
}

double parseReal(const std::string &text, const char *option) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(value))
    usageError(std::string(option) + " expects a finite number, got \"" + text +
               "\"");
  return value;
}

Distribution parseDist(const std::string &text, const char *option) {
  std::optional<Distribution> dist = parseDistribution(text);
  if (!dist)
    usageError(std::string(option) + ": unknown distribution \"" + text +
               "\" (known: normal, uniform, outlier)");
  return *dist;
}

/// Splits "NAME=VALUE" at the first '='.
std::pair<std::string, std::string> splitAssignment(const std::string &text,
                                                    const char *option,
                                                    const char *valueName) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    usageError(std::string(option) + " expects NAME=" + valueName + ", got \"" +
               text + "\"");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

template <typename T>
void addNamed(std::map<std::string, T> &map, std::pair<std::string, T> entry,
              const char *option) {
  if (!map.emplace(entry).second)
    usageError(std::string(option) + " given twice for \"" + entry.first +
               "\"");
}

/// An option that takes a value, as "--name value" or "--name=value".
struct ValuedOption {
  const char *name;
  void (*apply)(Options &opts, const std::string &value);
};

const ValuedOption kValuedOptions[] = {
    {"function",
     [](Options &opts, const std::string &value) { opts.function = value; }},
    {"input",
     [](Options &opts, const std::string &value) {
       addNamed(opts.inputs, splitAssignment(value, "--input", "FILE.npy"),
                "--input");
     }},
    {"random",
     [](Options &opts, const std::string &value) {
       auto [arg, dist] = splitAssignment(value, "--random", "DIST");
       addNamed(opts.distributions, {arg, parseDist(dist, "--random")},
                "--random");
     }},
    {"dim",
     [](Options &opts, const std::string &value) {
       auto [symbol, size] = splitAssignment(value, "--dim", "N");
       uint64_t n = parseCount(size, "--dim");
       if (n < 1 || n > uint64_t(kMaxElements))
         usageError("--dim " + value + ": a size must be in [1, 2^48]");
       addNamed(opts.dims, {symbol, int64_t(n)}, "--dim");
     }},
    {"dist",
     [](Options &opts, const std::string &value) {
       opts.defaultDistribution = parseDist(value, "--dist");
     }},
    {"seed",
     [](Options &opts, const std::string &value) {
       opts.seed = parseCount(value, "--seed");
     }},
    {"output-dir",
     [](Options &opts, const std::string &value) { opts.outputDir = value; }},
    {"max-rel-error",
     [](Options &opts, const std::string &value) {
       opts.maxRelError = parseReal(value, "--max-rel-error");
     }},
    {"min-sqnr",
     [](Options &opts, const std::string &value) {
       opts.minSqnr = parseReal(value, "--min-sqnr");
     }},
    {"repeat",
     [](Options &opts, const std::string &value) {
       opts.repeat = parseCount(value, "--repeat");
       if (*opts.repeat == 0)
         usageError("--repeat expects at least 1");
       if (*opts.repeat > 1000000)
         usageError("--repeat expects at most 1000000");
     }},
    {"device",
     [](Options &opts, const std::string &value) {
       uint64_t device = parseCount(value, "--device");
       if (device > 1024)
         usageError("--device expects a device ordinal, got " + value);
       opts.device = int(device);
     }},
};

const ValuedOption *findValuedOption(const std::string &name) {
  for (const ValuedOption &option : kValuedOptions)
    if (name == option.name)
      return &option;
  return nullptr;
}

Options parseOptions(int argc, char **argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    // --help-hidden as LLVM's tools take it: qattn-run has no hidden
    // options (it links no LLVM), so it shows the same text.
    if (arg == "--help" || arg == "-h" || arg == "--help-hidden") {
      opts.help = true;
      return opts;
    }
    // Options without a value.
    static const std::pair<const char *, bool Options::*> kFlags[] = {
        {"--cold-l2", &Options::coldL2},
        {"--quiet", &Options::quiet},
        {"--verbose", &Options::verbose},
        {"--list-devices", &Options::listDevices},
        {"--plan-only", &Options::planOnly}};
    auto flag = std::find_if(std::begin(kFlags), std::end(kFlags),
                             [&](const auto &f) { return arg == f.first; });
    if (flag != std::end(kFlags)) {
      opts.*(flag->second) = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!opts.artifactDir.empty())
        usageError("unexpected argument \"" + arg +
                   "\": the artifact directory is already \"" +
                   opts.artifactDir + "\"");
      opts.artifactDir = arg;
      continue;
    }
    // "--name=value" or "--name value".
    size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
    const ValuedOption *option = findValuedOption(name);
    if (!option)
      usageError("unknown option \"" + arg + "\"");
    std::string value;
    if (eq != std::string::npos)
      value = arg.substr(eq + 1);
    else if (i + 1 < argc)
      value = argv[++i];
    else
      usageError("option \"" + arg + "\" needs a value");
    option->apply(opts, value);
  }
  if (opts.artifactDir.empty() && !opts.listDevices)
    usageError("no artifact directory given");
  if (opts.planOnly) {
    // What only a run does.
    const std::pair<const char *, bool> kRunOnly[] = {
        {"--repeat", bool(opts.repeat)},
        {"--output-dir", bool(opts.outputDir)},
        {"--max-rel-error", bool(opts.maxRelError)},
        {"--min-sqnr", bool(opts.minSqnr)},
        {"--cold-l2", opts.coldL2}};
    for (const auto &[option, given] : kRunOnly)
      if (given)
        usageError(std::string("--plan-only runs nothing, so ") + option +
                   " does not apply");
  }
  return opts;
}

//===----------------------------------------------------------------------===//
// Arguments and results
//===----------------------------------------------------------------------===//

/// Where an argument's data came from, for the report.
struct ArgOrigin {
  bool generated = false;
  std::string description;
};

std::string describeTensor(const Tensor &tensor) {
  return std::string(dtypeName(tensor.getDType())) + " " +
         formatShape(tensor.getShape());
}

std::string describeNpy(DType dtype) {
  return std::string(npyDescr(dtype)) + " (" + dtypeName(dtype) + ")";
}

std::string argumentNames(const FunctionSpec &fn) {
  std::string names;
  for (const TensorSpec &arg : fn.args)
    names += (names.empty() ? "" : ", ") + arg.name;
  return names.empty() ? "no arguments" : names;
}

const FunctionSpec &selectFunction(const Manifest &manifest,
                                   const Options &opts) {
  const std::vector<FunctionSpec> &fns = manifest.functions;
  std::string names;
  for (const FunctionSpec &fn : fns)
    names += (names.empty() ? "" : ", ") + fn.name;
  if (opts.function) {
    if (const FunctionSpec *fn = manifest.findFunction(*opts.function))
      return *fn;
    fail("the artifact has no function \"", *opts.function,
         "\" (it has: ", names, ")");
  }
  if (fns.size() == 1)
    return fns[0];
  usageError("the artifact has " + std::to_string(fns.size()) + " functions (" +
             names + "); choose one with --function");
}

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

/// Rejects --input, --random and --dim entries that name no argument or
/// symbol, or one argument twice, before any file is read.
void checkArgumentOptions(const FunctionSpec &fn, const Options &opts) {
  auto isArg = [&](const std::string &name) {
    return std::any_of(fn.args.begin(), fn.args.end(),
                       [&](const TensorSpec &arg) { return arg.name == name; });
  };
  for (const auto &[name, file] : opts.inputs)
    if (!isArg(name))
      usageError("--input " + name + "=" + file + ": function \"" + fn.name +
                 "\" has no argument \"" + name + "\" (it has " +
                 argumentNames(fn) + ")");
  for (const auto &[name, dist] : opts.distributions) {
    if (!isArg(name))
      usageError("--random " + name + "=" + distributionName(dist) +
                 ": function \"" + fn.name + "\" has no argument \"" + name +
                 "\" (it has " + argumentNames(fn) + ")");
    if (opts.inputs.count(name))
      usageError("argument \"" + name + "\" has both --input and --random");
  }
  std::vector<std::string> symbols = fn.argumentSymbols();
  for (const auto &[symbol, size] : opts.dims)
    if (std::find(symbols.begin(), symbols.end(), symbol) == symbols.end())
      usageError("--dim " + symbol + "=" + std::to_string(size) +
                 ": function \"" + fn.name + "\" has no size symbol \"" +
                 symbol + "\"" +
                 (symbols.empty() ? " (its shapes are static)"
                                  : " (it has " + joined(symbols) + ")"));
}

/// What a .npy file for an argument of `dtype` may hold, for messages.
std::string acceptedNpy(DType dtype) {
  std::string accepted = describeNpy(dtype);
  if (!isFloat(dtype))
    return accepted;
  std::string convertible;
  for (DType source : {DType::F64, DType::F32})
    if (source != dtype)
      convertible +=
          (convertible.empty() ? "" : "/") + std::string(npyDescr(source));
  return accepted + ", or " + convertible + " to convert";
}

Tensor readArgumentFile(const TensorSpec &spec, const std::string &path) {
  try {
    return readNpy(path);
  } catch (const Error &error) {
    fail("argument \"", spec.name, "\": ", error.what());
  }
}

/// Reads argument `spec` from `path`; the file's sizes bind the spec's
/// symbols, or must match their bindings.
Tensor loadArgument(const TensorSpec &spec, const std::string &path,
                    ArgOrigin &origin, DimBindings &bindings) {
  Tensor tensor = readArgumentFile(spec, path);
  DType dtype = tensor.getDType();
  bool convertible =
      isFloat(spec.dtype) && (dtype == DType::F64 || dtype == DType::F32);
  if (dtype != spec.dtype && !convertible)
    fail("argument \"", spec.name, "\": ", path, " holds ", describeNpy(dtype),
         ", expected ", acceptedNpy(spec.dtype));
  const Shape &shape = tensor.getShape();
  if (!matchesStaticSizes(spec, shape.data(), shape.size()))
    fail("argument \"", spec.name, "\": ", path, " has shape ",
         formatShape(shape), ", expected ", formatShape(spec));
  bindSymbols(spec, shape.data(), bindings,
              "argument \"" + spec.name + "\": " + path,
              "argument \"" + spec.name + "\" (" + path + ")");
  origin.description = "from " + path;
  if (dtype == spec.dtype)
    return tensor;
  origin.description +=
      std::string(" (converted from ") + dtypeName(dtype) + ")";
  return tensor.convertTo(spec.dtype);
}

/// The shape of argument `spec`, which no file gives, at `bindings`. Throws
/// Error naming the symbols that nothing binds; `why` says why the shape is
/// needed (" is generated, but").
Shape boundShape(const TensorSpec &spec, const DimBindings &bindings,
                 const char *why) {
  std::vector<std::string> unbound = unboundSymbols(spec, bindings);
  if (!unbound.empty())
    fail("argument \"", spec.name, "\" ", formatShape(spec), why,
         " nothing gives the size of ", joined(unbound), ": bind ",
         unbound.size() == 1 ? "it" : "them", " with --dim ", unbound[0],
         "=SIZE", unbound.size() == 1 ? "" : " ...",
         ", or give an argument that has ", unbound.size() == 1 ? "it" : "them",
         " with --input");
  return resolveShape(spec, bindings, "argument \"" + spec.name + "\"");
}

Tensor generateArgument(const TensorSpec &spec, size_t index,
                        const Options &opts, const DimBindings &bindings,
                        ArgOrigin &origin) {
  if (!isFloat(spec.dtype))
    fail("argument \"", spec.name, "\" is ", dtypeName(spec.dtype),
         ": integer arguments are not generated; give it with --input ",
         spec.name, "=FILE.npy");
  Shape shape = boundShape(spec, bindings, " is generated, but");
  auto chosen = opts.distributions.find(spec.name);
  Distribution dist = chosen == opts.distributions.end()
                          ? opts.defaultDistribution
                          : chosen->second;
  origin.generated = true;
  origin.description = std::string("random ") + distributionName(dist);
  return randomTensor(spec.dtype, shape, dist, deriveSeed(opts.seed, index));
}

/// Binds --dim's symbols, then reads the arguments that come from files,
/// whose shapes bind theirs; the others stay empty.
std::vector<std::optional<Tensor>>
loadArguments(const FunctionSpec &fn, const Options &opts,
              std::vector<ArgOrigin> &origins, DimBindings &bindings) {
  for (const auto &[symbol, size] : opts.dims)
    bindings.bind(symbol, size,
                  "--dim " + symbol + "=" + std::to_string(size));
  std::vector<std::optional<Tensor>> loaded(fn.args.size());
  origins.assign(fn.args.size(), ArgOrigin());
  for (size_t i = 0; i < fn.args.size(); ++i) {
    auto input = opts.inputs.find(fn.args[i].name);
    if (input != opts.inputs.end())
      loaded[i] =
          loadArgument(fn.args[i], input->second, origins[i], bindings);
  }
  return loaded;
}

/// The function's arguments: first those from files, which bind their
/// symbols (after --dim), then the generated ones, which take the bound
/// sizes. Fills `bindings`.
std::vector<Tensor> prepareArguments(const FunctionSpec &fn,
                                     const Options &opts,
                                     std::vector<ArgOrigin> &origins,
                                     DimBindings &bindings) {
  std::vector<std::optional<Tensor>> loaded =
      loadArguments(fn, opts, origins, bindings);
  std::vector<Tensor> args;
  for (size_t i = 0; i < fn.args.size(); ++i)
    args.push_back(loaded[i] ? std::move(*loaded[i])
                             : generateArgument(fn.args[i], i, opts, bindings,
                                                origins[i]));
  return args;
}

/// Fills `tensor` with values a correct function overwrites and that are
/// easy to spot if it does not: NaN for floats, 0x5A bytes for integers.
void poison(Tensor &tensor) {
  if (!isFloat(tensor.getDType())) {
    std::memset(tensor.data(), 0x5A, tensor.getByteSize());
    return;
  }
  for (int64_t i = 0; i < tensor.getNumElements(); ++i)
    tensor.setDouble(i, std::numeric_limits<double>::quiet_NaN());
}

std::vector<Tensor> allocateResults(const FunctionSpec &fn,
                                    const DimBindings &bindings) {
  std::vector<Tensor> results;
  for (const TensorSpec &spec : fn.results) {
    results.emplace_back(spec.dtype,
                         resolveShape(spec, bindings,
                                      "result \"" + spec.name + "\""));
    poison(results.back());
  }
  return results;
}

//===----------------------------------------------------------------------===//
// Running and reporting
//===----------------------------------------------------------------------===//

double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  size_t mid = times.size() / 2;
  return times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
}

/// Runs `fn` `repeat` times and returns the wall time of each call in ms.
std::vector<double> runTimed(Function &fn, const std::vector<Tensor> &args,
                             std::vector<Tensor> &results, uint64_t repeat) {
  std::vector<double> times;
  for (uint64_t i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn.call(args, results);
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    times.push_back(elapsed.count());
  }
  return times;
}

/// What --repeat prints at the end.
std::string timeLine(Function &fn, const std::vector<Tensor> &args,
                     std::vector<Tensor> &results, uint64_t repeat,
                     bool coldL2) {
  char text[160];
  if (auto *cuda = dynamic_cast<CudaFunction *>(&fn)) {
    // Kernel time only: the checked results come from the call before.
    std::vector<double> micros =
        cuda->time(args, kCudaWarmups, unsigned(repeat), coldL2);
    std::snprintf(text, sizeof(text),
                  "time: median %.2f us, min %.2f us over %llu runs (CUDA "
                  "events, after %u warm-up runs%s)",
                  median(micros), *std::min_element(micros.begin(), micros.end()),
                  (unsigned long long)repeat, kCudaWarmups,
                  coldL2 ? ", L2 flushed before each" : "");
    return text;
  }
  std::vector<double> ms = runTimed(fn, args, results, repeat);
  std::snprintf(text, sizeof(text), "time: median %.4f ms over %llu runs",
                median(ms), (unsigned long long)repeat);
  return text;
}

void writeOutputs(const std::string &dir, const FunctionSpec &fn,
                  const std::vector<Tensor> &args,
                  const std::vector<ArgOrigin> &origins,
                  const std::vector<Tensor> &results, bool quiet) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    fail(dir, ": cannot create the output directory: ", ec.message());
  size_t written = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (origins[i].generated) {
      writeNpy(dir + "/" + fn.args[i].name + ".npy", args[i]);
      ++written;
    }
  for (size_t i = 0; i < results.size(); ++i) {
    writeNpy(dir + "/" + fn.results[i].name + ".npy", results[i]);
    ++written;
  }
  if (!quiet)
    std::cout << "wrote " << written << (written == 1 ? " file" : " files")
              << " to " << dir << "\n";
}

std::string formatThreshold(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// Reports results that still hold NaN; returns whether any does.
bool reportNaNs(const FunctionSpec &fn, const std::vector<Tensor> &results) {
  bool found = false;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!isFloat(results[i].getDType()))
      continue;
    int64_t nans = countNaN(results[i].toDoubles());
    if (nans == 0)
      continue;
    std::cout << "FAIL: result " << fn.results[i].name << " holds " << nans
              << " NaN values of " << results[i].getNumElements()
              << " (left unwritten or computed as NaN)\n";
    found = true;
  }
  return found;
}

/// Prints one line per expectation and a FAIL line per violated threshold;
/// returns whether any threshold is violated.
bool reportChecks(const FunctionSpec &fn,
                  const std::vector<Expectation> &expectations,
                  const std::vector<Tensor> &results, const Options &opts) {
  bool failed = false;
  for (const Expectation &expected : expectations) {
    ErrorMetrics metrics =
        compare(results[expected.result].toDoubles(), expected.values);
    std::string what =
        "result " + fn.results[expected.result].name + " vs " + expected.source;
    std::cout << what << ": " << formatMetrics(metrics) << "\n";
    // A NaN metric says nothing about accuracy, so it fails the run without
    // a threshold too. A result's own NaNs are reportNaNs' failure; this
    // names the other causes.
    bool nanMetrics = std::isnan(metrics.maxAbs) ||
                      std::isnan(metrics.relFro) || std::isnan(metrics.sqnrDb);
    if (nanMetrics && !opts.maxRelError && !opts.minSqnr) {
      int64_t referenceNaNs = countNaN(expected.values);
      if (referenceNaNs)
        std::cout << "FAIL: " << what << ": the error metrics are NaN: the "
                  << "reference holds " << referenceNaNs
                  << " NaN values (NaN or infinite arguments, or an overflow "
                     "in float64)\n";
      else if (!countNaN(results[expected.result].toDoubles()))
        std::cout << "FAIL: " << what << ": the error metrics are NaN: the "
                  << "sums of squares overflow float64\n";
      failed = true;
    }
    // Negated comparisons, so that NaN metrics fail.
    if (opts.maxRelError && !(metrics.relFro <= *opts.maxRelError)) {
      std::cout << "FAIL: " << what << ": rel_fro violates --max-rel-error "
                << formatThreshold(*opts.maxRelError) << "\n";
      failed = true;
    }
    if (opts.minSqnr && !(metrics.sqnrDb >= *opts.minSqnr)) {
      std::cout << "FAIL: " << what << ": sqnr violates --min-sqnr "
                << formatThreshold(*opts.minSqnr) << " dB\n";
      failed = true;
    }
  }
  return failed;
}

/// "[4, 24, 1]".
std::string formatGridSizes(const std::array<uint32_t, 3> &grid) {
  return "[" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + ", " +
         std::to_string(grid[2]) + "]";
}

/// What a cuda function's call launches at the bound sizes: a line per
/// named size, per scratch buffer and per launch (and with `params`, a line
/// of its parameters), as the runtime launches it.
void printLaunchPlan(const FunctionSpec &fn, const LaunchPlan &plan,
                     bool params) {
  for (const NamedSize &named : fn.sizes)
    std::cout << "  size " << named.name << " = " << formatSizeExpr(named.size)
              << " = " << plan.bindings.find(named.name)->size << "\n";
  for (size_t i = 0; i < fn.buffers.size(); ++i)
    std::cout << "  buffer " << fn.buffers[i].name << ": "
              << dtypeName(fn.buffers[i].dtype) << " "
              << formatShape(plan.bufferShapes[i]) << ", "
              << plan.bufferBytes[i] << " bytes\n";
  for (size_t i = 0; i < fn.launches.size(); ++i) {
    const LaunchSpec &launch = fn.launches[i];
    std::cout << "  launch " << launch.kernel << " grid "
              << formatGridSizes(plan.launches[i].grid);
    if (launch.hasSymbolicGrid())
      std::cout << " = [" << formatSizeExpr(launch.grid[0]) << ", "
                << formatSizeExpr(launch.grid[1]) << ", "
                << formatSizeExpr(launch.grid[2]) << "]";
    std::cout << ", block " << formatGridSizes(launch.block) << ", shared "
              << launch.sharedBytes << " B" << (launch.early ? ", early" : "")
              << "\n";
    if (!params)
      continue;
    std::cout << "    params";
    for (size_t p = 0; p < launch.params.size(); ++p) {
      const LaunchParam &param = launch.params[p];
      std::cout << (p ? ", " : " ");
      if (param.kind == LaunchParam::Kind::Dim)
        std::cout << param.symbol << "=" << plan.launches[i].dims[p];
      else
        std::cout << fn.getParamTensor(param)->name;
    }
    std::cout << (launch.params.empty() ? " (none)" : "") << "\n";
  }
}

void printHeader(const Options &opts, const Manifest &manifest,
                 const std::string &where, const FunctionSpec &fn,
                 const std::vector<Tensor> &args,
                 const std::vector<ArgOrigin> &origins,
                 const std::vector<Tensor> &results,
                 const DimBindings &bindings, const LaunchPlan *plan) {
  std::cout << "artifact " << opts.artifactDir << " (target " << manifest.target
            << "), function " << fn.name << ", seed " << opts.seed << "\n";
  if (!where.empty())
    std::cout << "  " << where << "\n";
  if (!bindings.empty())
    std::cout << "  dims " << bindings.format() << "\n";
  for (size_t i = 0; i < fn.args.size(); ++i)
    std::cout << "  arg " << fn.args[i].name << ": " << describeTensor(args[i])
              << ", " << origins[i].description << "\n";
  for (size_t i = 0; i < fn.results.size(); ++i)
    std::cout << "  result " << fn.results[i].name << ": "
              << describeTensor(results[i]) << "\n";
  if (plan)
    printLaunchPlan(fn, *plan, false);
}

int run(const Options &opts) {
  LoadOptions load;
  load.device = opts.device;
  load.log = opts.verbose ? &std::cerr : nullptr;
  std::unique_ptr<Artifact> artifact = loadArtifact(opts.artifactDir, load);
  const FunctionSpec &spec = selectFunction(artifact->getManifest(), opts);
  Function &fn = artifact->getFunction(spec.name);
  checkArgumentOptions(spec, opts);
  if ((opts.maxRelError || opts.minSqnr) &&
      spec.reference.kind == Reference::Kind::None)
    usageError("function \"" + spec.name +
               "\" has no reference to check --max-rel-error or --min-sqnr "
               "against");

  std::vector<ArgOrigin> origins;
  DimBindings bindings;
  std::vector<Tensor> args = prepareArguments(spec, opts, origins, bindings);
  std::vector<Tensor> results = allocateResults(spec, bindings);
  // Before the call: with symbolic sizes, the reference's shape rules are
  // checked only here, and a violation should stop the run.
  std::vector<Expectation> expectations = expectedResults(spec, args);
  // Target cuda: what the call will launch, computed as the runtime does
  // (so that an out-of-range grid stops the run here, as the call would).
  std::optional<LaunchPlan> plan;
  if (!spec.launches.empty())
    plan = planLaunches(spec, bindings);
  if (!opts.quiet)
    printHeader(opts, artifact->getManifest(), artifact->describe(), spec, args,
                origins, results, bindings, plan ? &*plan : nullptr);

  // A cpu function is timed by calling it, and the checks use the last
  // call. A cuda function is called once for the checks, then timed on the
  // device.
  std::string time;
  if (opts.repeat && !dynamic_cast<CudaFunction *>(&fn)) {
    time = timeLine(fn, args, results, *opts.repeat, opts.coldL2);
  } else {
    fn.call(args, results);
    if (opts.repeat)
      time = timeLine(fn, args, results, *opts.repeat, opts.coldL2);
  }
  if (opts.outputDir)
    writeOutputs(*opts.outputDir, spec, args, origins, results, opts.quiet);

  bool failed = reportNaNs(spec, results);
  failed = reportChecks(spec, expectations, results, opts) || failed;
  if (opts.repeat)
    std::cout << time << "\n";
  return failed ? kExitCheckFailed : kExitOk;
}

/// --plan-only: the manifest alone, no module, no driver. The symbols bind
/// as for a run (--dim, then the files); every argument's shape must follow.
int planOnly(const Options &opts) {
  Manifest manifest = loadManifest(opts.artifactDir);
  if (manifest.target != "cuda")
    usageError("--plan-only: the artifact's target is \"" + manifest.target +
               "\"; only target cuda has launches to plan");
  const FunctionSpec &spec = selectFunction(manifest, opts);
  checkArgumentOptions(spec, opts);
  std::vector<ArgOrigin> origins;
  DimBindings bindings;
  std::vector<std::optional<Tensor>> loaded =
      loadArguments(spec, opts, origins, bindings);
  std::vector<Shape> argShapes;
  for (size_t i = 0; i < spec.args.size(); ++i)
    argShapes.push_back(
        loaded[i] ? loaded[i]->getShape()
                  : boundShape(spec.args[i], bindings, " has no --input, and"));
  std::vector<Shape> resultShapes;
  for (const TensorSpec &result : spec.results)
    resultShapes.push_back(
        resolveShape(result, bindings, "result \"" + result.name + "\""));
  LaunchPlan plan = planLaunches(spec, bindings);

  std::cout << "artifact " << opts.artifactDir << " (target cuda), function "
            << spec.name << ", plan only: nothing is launched\n";
  if (!bindings.empty())
    std::cout << "  dims " << bindings.format() << "\n";
  for (size_t i = 0; i < spec.args.size(); ++i)
    std::cout << "  arg " << spec.args[i].name << ": "
              << dtypeName(spec.args[i].dtype) << " "
              << formatShape(argShapes[i])
              << (loaded[i] ? ", " + origins[i].description : "") << "\n";
  for (size_t i = 0; i < spec.results.size(); ++i)
    std::cout << "  result " << spec.results[i].name << ": "
              << dtypeName(spec.results[i].dtype) << " "
              << formatShape(resultShapes[i]) << "\n";
  printLaunchPlan(spec, plan, true);
  if (!spec.buffers.empty()) {
    std::cout << "  workspace " << workspaceBytes(plan)
              << " bytes (a caller's, qattnRtRunWorkspace): buffers at";
    std::vector<size_t> offsets = workspaceOffsets(plan);
    for (size_t i = 0; i < offsets.size(); ++i)
      std::cout << (i ? ", " : " ") << spec.buffers[i].name << " +"
                << offsets[i];
    std::cout << "\n";
  }
  return kExitOk;
}

int listDevices() {
  for (const std::string &line : describeCudaDevices())
    std::cout << line << "\n";
  return kExitOk;
}
} // namespace

int main(int argc, char **argv) {
  try {
    Options opts = parseOptions(argc, argv);
    if (opts.help) {
      std::cout << kHelp;
      return kExitOk;
    }
    if (opts.listDevices)
      return listDevices();
    if (opts.planOnly)
      return planOnly(opts);
    return run(opts);
  } catch (const Error &error) {
    std::cout.flush();
    std::cerr << "qattn-run: error: " << error.what() << "\n";
  } catch (const std::bad_alloc &) {
    std::cout.flush();
    std::cerr << "qattn-run: error: out of memory\n";
  } catch (const std::exception &error) {
    // Not an input problem the runtime diagnosed, but still no reason to
    // abort without a word.
    std::cout.flush();
    std::cerr << "qattn-run: error: " << error.what() << "\n";
  }
  return kExitError;
}
