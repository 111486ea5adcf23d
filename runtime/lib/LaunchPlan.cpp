//===- LaunchPlan.cpp - Launches at one call's sizes ----------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/LaunchPlan.h"

#include "qattn/Runtime/Error.h"

#include <algorithm>

using namespace qattn::rt;

namespace {
const char *const kGridNames[] = {"x", "y", "z"};

void collectSymbols(const SizeExpr &expr, std::vector<std::string> &symbols) {
  if (expr.kind == SizeExpr::Kind::Symbol) {
    if (std::find(symbols.begin(), symbols.end(), expr.symbol) == symbols.end())
      symbols.push_back(expr.symbol);
    return;
  }
  for (const SizeExpr &operand : expr.operands)
    collectSymbols(operand, symbols);
}

/// "B=4375, N=12" for the symbols of `expr`.
std::string formatBindingsOf(const SizeExpr &expr,
                             const DimBindings &bindings) {
  std::string text;
  for (const std::string &symbol : sizeExprSymbols(expr)) {
    const DimBindings::Binding *bound = bindings.find(symbol);
    text += (text.empty() ? "" : ", ") + symbol + "=" +
            (bound ? std::to_string(bound->size) : "?");
  }
  return text;
}

/// "grid y = B*16".
std::string describeGridSize(size_t dim, const SizeExpr &expr) {
  return std::string("grid ") + kGridNames[dim] + " = " + formatSizeExpr(expr);
}

/// " with B=4375" for the symbols of `expr`; "" if it has none.
std::string withBindings(const SizeExpr &expr, const DimBindings &bindings) {
  std::string used = formatBindingsOf(expr, bindings);
  return used.empty() ? "" : " with " + used;
}
} // namespace

const char *qattn::rt::describeSizeError(SizeError error) {
  return error == SizeError::DivisionByZero ? "divides by 0"
                                            : "overflows int64";
}

std::optional<int64_t> qattn::rt::evaluateSize(const SizeExpr &expr,
                                               const DimBindings &bindings,
                                               SizeError *why) {
  auto failWith = [&](SizeError error) -> std::optional<int64_t> {
    if (why)
      *why = error;
    return std::nullopt;
  };
  switch (expr.kind) {
  case SizeExpr::Kind::Constant:
    return expr.value;
  case SizeExpr::Kind::Symbol: {
    const DimBindings::Binding *bound = bindings.find(expr.symbol);
    if (!bound)
      fail("nothing binds the size symbol \"", expr.symbol, "\" of ",
           formatSizeExpr(expr));
    return bound->size;
  }
  case SizeExpr::Kind::Mul:
  case SizeExpr::Kind::Add:
  case SizeExpr::Kind::Min:
  case SizeExpr::Kind::Max: {
    std::optional<int64_t> value;
    for (const SizeExpr &operand : expr.operands) {
      std::optional<int64_t> term = evaluateSize(operand, bindings, why);
      if (!term)
        return std::nullopt;
      if (!value) {
        value = term;
        continue;
      }
      switch (expr.kind) {
      case SizeExpr::Kind::Mul:
        if (__builtin_mul_overflow(*value, *term, &*value))
          return failWith(SizeError::Overflow);
        break;
      case SizeExpr::Kind::Add:
        if (__builtin_add_overflow(*value, *term, &*value))
          return failWith(SizeError::Overflow);
        break;
      case SizeExpr::Kind::Min:
        value = std::min(*value, *term);
        break;
      default:
        value = std::max(*value, *term);
        break;
      }
    }
    return value;
  }
  case SizeExpr::Kind::Div:
  case SizeExpr::Kind::CeilDiv: {
    std::optional<int64_t> dividend =
        evaluateSize(expr.operands[0], bindings, why);
    if (!dividend)
      return std::nullopt;
    int64_t divisor = expr.value;
    if (expr.kind == SizeExpr::Kind::Div) {
      std::optional<int64_t> d = evaluateSize(expr.operands[1], bindings, why);
      if (!d)
        return std::nullopt;
      divisor = *d;
    }
    // A quotient rounded down may be 0, and so may what divides by it.
    if (divisor == 0)
      return failWith(SizeError::DivisionByZero);
    // Both are at least 0, so neither rounding overflows.
    int64_t quotient = *dividend / divisor;
    if (expr.kind == SizeExpr::Kind::CeilDiv && *dividend % divisor != 0)
      ++quotient;
    return quotient;
  }
  }
  return std::nullopt;
}

std::string qattn::rt::formatSizeExpr(const SizeExpr &expr) {
  switch (expr.kind) {
  case SizeExpr::Kind::Constant:
    return std::to_string(expr.value);
  case SizeExpr::Kind::Symbol:
    return expr.symbol;
  case SizeExpr::Kind::Mul:
  case SizeExpr::Kind::Add: {
    bool mul = expr.kind == SizeExpr::Kind::Mul;
    std::string text;
    for (const SizeExpr &operand : expr.operands) {
      std::string term = formatSizeExpr(operand);
      // A sum inside a product needs parentheses; nothing else does.
      if (mul && operand.kind == SizeExpr::Kind::Add &&
          operand.operands.size() > 1)
        term = "(" + term + ")";
      text += (text.empty() ? "" : mul ? "*" : "+") + term;
    }
    return text;
  }
  case SizeExpr::Kind::Min:
  case SizeExpr::Kind::Max:
  case SizeExpr::Kind::Div: {
    std::string text = expr.kind == SizeExpr::Kind::Min   ? "min("
                       : expr.kind == SizeExpr::Kind::Max ? "max("
                                                          : "div(";
    for (size_t i = 0; i < expr.operands.size(); ++i)
      text += (i ? ", " : "") + formatSizeExpr(expr.operands[i]);
    return text + ")";
  }
  case SizeExpr::Kind::CeilDiv:
    return "ceil_div(" + formatSizeExpr(expr.operands[0]) + ", " +
           std::to_string(expr.value) + ")";
  }
  return "?";
}

std::vector<std::string> qattn::rt::sizeExprSymbols(const SizeExpr &expr) {
  std::vector<std::string> symbols;
  collectSymbols(expr, symbols);
  return symbols;
}

std::string qattn::rt::describeLaunch(const FunctionSpec &fn, size_t launch) {
  return "kernel \"" + fn.launches[launch].kernel + "\" (launch " +
         std::to_string(launch) + " of function \"" + fn.name + "\")";
}

void qattn::rt::planLaunches(const FunctionSpec &fn,
                             const DimBindings &callBindings,
                             LaunchPlan &plan) {
  // The named sizes, in order, bound beside the call's symbols.
  plan.bindings = callBindings;
  const DimBindings &bindings = plan.bindings;
  for (const NamedSize &named : fn.sizes) {
    std::string what = "size \"" + named.name + "\" of function \"" + fn.name +
                       "\" = " + formatSizeExpr(named.size);
    SizeError why = SizeError::None;
    std::optional<int64_t> value = evaluateSize(named.size, bindings, &why);
    if (!value)
      fail(what, " ", describeSizeError(why),
           withBindings(named.size, bindings));
    if (*value < 1)
      fail(what, " is ", *value, withBindings(named.size, bindings),
           "; a size must be at least 1");
    plan.bindings.bind(named.name, *value, "size \"" + named.name + "\"");
  }
  plan.bufferShapes.resize(fn.buffers.size());
  plan.bufferBytes.resize(fn.buffers.size());
  for (size_t i = 0; i < fn.buffers.size(); ++i) {
    const TensorSpec &buffer = fn.buffers[i];
    if (!buffer.hasSymbols()) {
      plan.bufferShapes[i] = buffer.shape;
    } else {
      plan.bufferShapes[i] = resolveShape(
          buffer, bindings,
          "buffer \"" + buffer.name + "\" of function \"" + fn.name + "\"");
    }
    plan.bufferBytes[i] =
        size_t(*numElements(plan.bufferShapes[i])) * dtypeSize(buffer.dtype);
  }

  plan.launches.resize(fn.launches.size());
  for (size_t i = 0; i < fn.launches.size(); ++i) {
    const LaunchSpec &launch = fn.launches[i];
    LaunchPlan::Launch &planned = plan.launches[i];
    for (size_t d = 0; d < 3; ++d) {
      const SizeExpr &expr = launch.grid[d];
      SizeError why = SizeError::None;
      std::optional<int64_t> size = evaluateSize(expr, bindings, &why);
      if (!size)
        fail(describeLaunch(fn, i), ": ", describeGridSize(d, expr), " ",
             describeSizeError(why), withBindings(expr, bindings));
      // A quotient rounded down may make a size 0: a launch of no blocks is
      // refused rather than left to the driver.
      if (*size < 1 || *size > kCudaGridLimits[d])
        fail(describeLaunch(fn, i), ": ", describeGridSize(d, expr), " is ",
             *size, withBindings(expr, bindings), "; CUDA allows 1 to ",
             kCudaGridLimits[d]);
      planned.grid[d] = uint32_t(*size);
    }
    planned.dims.assign(launch.params.size(), 0);
    for (size_t p = 0; p < launch.params.size(); ++p) {
      const LaunchParam &param = launch.params[p];
      if (param.kind != LaunchParam::Kind::Dim)
        continue;
      const DimBindings::Binding *bound = bindings.find(param.symbol);
      if (!bound)
        fail(describeLaunch(fn, i), ": parameter ", p, ": nothing binds ",
             param.symbol);
      if (bound->size > kMaxDimParam)
        fail(describeLaunch(fn, i), ": parameter ", p, " is ", param.symbol,
             " = ", bound->size,
             ", which a 32-bit integer parameter cannot "
             "hold (at most ",
             kMaxDimParam, ")");
      planned.dims[p] = int32_t(bound->size);
    }
  }
}

LaunchPlan qattn::rt::planLaunches(const FunctionSpec &fn,
                                   const DimBindings &bindings) {
  LaunchPlan plan;
  planLaunches(fn, bindings, plan);
  return plan;
}

static size_t alignWorkspace(size_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
         kWorkspaceAlignment;
}

std::vector<size_t> qattn::rt::workspaceOffsets(const LaunchPlan &plan) {
  std::vector<size_t> offsets;
  size_t at = 0;
  for (size_t bytes : plan.bufferBytes) {
    offsets.push_back(at);
    at += alignWorkspace(bytes);
  }
  return offsets;
}

size_t qattn::rt::workspaceBytes(const LaunchPlan &plan) {
  size_t total = 0;
  for (size_t bytes : plan.bufferBytes)
    total += alignWorkspace(bytes);
  return total;
}
