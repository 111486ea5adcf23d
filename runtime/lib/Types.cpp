//===- Types.cpp - Element types and shapes -------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Types.h"

#include <array>

using namespace qattn::rt;

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
  bool isFloat;
};

constexpr std::array<DTypeInfo, 7> kDTypes = {{
    {DType::F64, "f64", 8, true},
    {DType::F32, "f32", 4, true},
    {DType::F16, "f16", 2, true},
    {DType::BF16, "bf16", 2, true},
    {DType::I64, "i64", 8, false},
    {DType::I32, "i32", 4, false},
    {DType::I8, "i8", 1, false},
}};

const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.dtype == dtype)
      return entry;
  return kDTypes[0]; // Unreachable: kDTypes lists every DType.
}
} // namespace

const char *qattn::rt::dtypeName(DType dtype) { return info(dtype).name; }

std::optional<DType> qattn::rt::parseDType(std::string_view name) {
  for (const DTypeInfo &entry : kDTypes)
    if (name == entry.name)
      return entry.dtype;
  return std::nullopt;
}

size_t qattn::rt::dtypeSize(DType dtype) { return info(dtype).size; }

bool qattn::rt::isFloat(DType dtype) { return info(dtype).isFloat; }

std::optional<int64_t> qattn::rt::numElements(const Shape &shape) {
  int64_t count = 1;
  bool empty = false;
  for (int64_t size : shape) {
    if (size < 0)
      return std::nullopt;
    if (size == 0) {
      empty = true;
      continue;
    }
    if (count > kMaxElements / size)
      return std::nullopt;
    count *= size;
  }
  return empty ? 0 : count;
}

std::string qattn::rt::formatShape(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

bool TensorSpec::hasSymbols() const {
  for (const std::string &symbol : symbols)
    if (!symbol.empty())
      return true;
  return false;
}

const std::string &TensorSpec::getSymbol(size_t dim) const {
  static const std::string kStatic;
  return dim < symbols.size() ? symbols[dim] : kStatic;
}

std::string qattn::rt::formatShape(const TensorSpec &spec) {
  std::string text = "[";
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    if (i)
      text += ", ";
    const std::string &symbol = spec.getSymbol(i);
    text += symbol.empty() ? std::to_string(spec.shape[i]) : symbol;
  }
  return text + "]";
}
