//===- Dims.cpp - Symbolic sizes of a function's tensors ------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Dims.h"

#include "qattn/Runtime/Error.h"

#include "Checks.h"

#include <algorithm>

using namespace qattn::rt;

const DimBindings::Binding *DimBindings::find(std::string_view symbol) const {
  for (const Binding &binding : bindings)
    if (binding.symbol == symbol)
      return &binding;
  return nullptr;
}

void DimBindings::bind(std::string symbol, int64_t size, std::string source) {
  bindings.push_back({std::move(symbol), size, std::move(source)});
}

std::string DimBindings::format() const {
  std::string text;
  for (const Binding &binding : bindings)
    text += (text.empty() ? "" : ", ") + binding.symbol + "=" +
            std::to_string(binding.size);
  return text;
}

bool qattn::rt::matchesStaticSizes(const TensorSpec &spec,
                                   const int64_t *shape, size_t rank) {
  if (spec.shape.size() != rank)
    return false;
  for (size_t i = 0; i < rank; ++i)
    if (spec.getSymbol(i).empty() && spec.shape[i] != shape[i])
      return false;
  return true;
}

void qattn::rt::bindSymbols(const TensorSpec &spec, const int64_t *shape,
                            DimBindings &bindings, const std::string &what,
                            const std::string &source) {
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    const std::string &symbol = spec.getSymbol(i);
    if (symbol.empty())
      continue;
    // A size 0 would make an empty batch or cache, which the kernels and
    // the references have no use for; a negative one is no size.
    if (shape[i] < 1)
      fail(what, ": dimension ", i, " (", symbol, ") is ", shape[i],
           "; a symbolic size must be at least 1");
    if (const DimBindings::Binding *bound = bindings.find(symbol)) {
      if (bound->size != shape[i])
        fail(what, ": dimension ", i, " (", symbol, ") is ", shape[i],
             ", but ", symbol, " = ", bound->size, " from ", bound->source);
      continue;
    }
    bindings.bind(symbol, shape[i], source);
  }
}

std::vector<std::string>
qattn::rt::unboundSymbols(const TensorSpec &spec, const DimBindings &bindings) {
  std::vector<std::string> unbound;
  for (const std::string &symbol : spec.symbols)
    if (!symbol.empty() && !bindings.find(symbol) &&
        std::find(unbound.begin(), unbound.end(), symbol) == unbound.end())
      unbound.push_back(symbol);
  return unbound;
}

Shape qattn::rt::resolveShape(const TensorSpec &spec,
                              const DimBindings &bindings,
                              const std::string &what) {
  Shape shape = spec.shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    const std::string &symbol = spec.getSymbol(i);
    if (symbol.empty())
      continue;
    const DimBindings::Binding *bound = bindings.find(symbol);
    if (!bound)
      fail(what, ": nothing binds ", symbol, ", the size of dimension ", i);
    shape[i] = bound->size;
  }
  if (!numElements(shape))
    fail(what, ": ", formatShape(spec), " = ", formatShape(shape),
         " has too many elements");
  return shape;
}

std::vector<Shape>
qattn::rt::getResultShapes(const FunctionSpec &fn,
                           const std::vector<Shape> &argShapes,
                           DimBindings *bindings) {
  checkCount("argument", fn.args.size(), argShapes.size(), fn.name);
  DimBindings local;
  DimBindings &bound = bindings ? *bindings : local;
  for (size_t i = 0; i < fn.args.size(); ++i) {
    const TensorSpec &spec = fn.args[i];
    const Shape &shape = argShapes[i];
    std::string what = "argument \"" + spec.name + "\" of function \"" +
                       fn.name + "\"";
    if (!matchesStaticSizes(spec, shape.data(), shape.size()))
      fail(what, ": expected shape ", formatShape(spec), ", got ",
           formatShape(shape));
    bindSymbols(spec, shape.data(), bound, what,
                "argument \"" + spec.name + "\"");
  }
  std::vector<Shape> shapes;
  for (const TensorSpec &spec : fn.results)
    shapes.push_back(resolveShape(
        spec, bound, "result \"" + spec.name + "\" of function \"" + fn.name +
                         "\""));
  return shapes;
}
