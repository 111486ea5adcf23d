//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Format reference: numpy/lib/format.py. A file is the magic "\x93NUMPY", a
// major and minor version byte, the header length (2 bytes little-endian in
// 1.0, 4 in 2.0), the header (a Python dict literal padded with spaces and a
// newline so that the data starts at a multiple of 64 bytes), then the data.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Npy.h"

#include "qattn/Runtime/Error.h"

#include "Files.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy reader assumes a little-endian host"
#endif

using namespace qattn::rt;

namespace {
constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
/// NumPy aligns the data to this many bytes; so do we when writing.
constexpr size_t kAlign = 64;

struct DescrEntry {
  const char *descr;
  DType dtype;
};

/// Every accepted type string; the first one listed for a dtype is the one
/// written.
constexpr std::array<DescrEntry, 8> kDescrs = {{
    {"<f8", DType::F64},
    {"<f4", DType::F32},
    {"<f2", DType::F16},
    {"<u2", DType::BF16},
    {"<i8", DType::I64},
    {"<i4", DType::I32},
    {"|i1", DType::I8},
    {"|u1", DType::I8},
}};

std::optional<DType> dtypeForDescr(std::string_view descr) {
  for (const DescrEntry &entry : kDescrs)
    if (descr == entry.descr)
      return entry.dtype;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Header dictionary
//===----------------------------------------------------------------------===//

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  Shape shape;
};

/// Parses the header's Python dict literal, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
/// Only the literals NumPy writes there are accepted: quoted strings, True,
/// False and tuples of non-negative integers.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &path)
      : text(text), path(path) {}

  NpyHeader parse() {
    NpyHeader header;
    bool seenDescr = false, seenOrder = false, seenShape = false;
    expect('{');
    while (!consume('}')) {
      std::string key = parseString();
      expect(':');
      if (key == "descr" && !seenDescr) {
        header.descr = parseString();
        seenDescr = true;
      } else if (key == "fortran_order" && !seenOrder) {
        header.fortranOrder = parseBool();
        seenOrder = true;
      } else if (key == "shape" && !seenShape) {
        header.shape = parseTuple();
        seenShape = true;
      } else {
        error("unexpected or repeated key '" + key + "'");
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skipSpace();
    if (pos != text.size())
      error("unexpected text after the dictionary");
    if (!seenDescr || !seenOrder || !seenShape)
      error("the dictionary needs 'descr', 'fortran_order' and 'shape'");
    return header;
  }

private:
  [[noreturn]] void error(const std::string &what) const {
    fail(path, ": malformed header at byte ", pos, ": ", what);
  }

  void skipSpace() {
    while (pos < text.size() && std::isspace((unsigned char)text[pos]))
      ++pos;
  }

  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c))
      error(std::string("expected '") + c + "'");
  }

  bool consumeWord(std::string_view word) {
    skipSpace();
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  std::string parseString() {
    skipSpace();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      error("expected a quoted string");
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string_view::npos)
      error("unterminated string");
    std::string value(text.substr(pos, end - pos));
    pos = end + 1;
    return value;
  }

  bool parseBool() {
    if (consumeWord("True"))
      return true;
    if (consumeWord("False"))
      return false;
    error("expected True or False");
  }

  Shape parseTuple() {
    Shape shape;
    expect('(');
    while (!consume(')')) {
      shape.push_back(parseSize());
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  int64_t parseSize() {
    skipSpace();
    if (pos >= text.size() || !std::isdigit((unsigned char)text[pos]))
      error("expected a non-negative integer");
    int64_t value = 0;
    while (pos < text.size() && std::isdigit((unsigned char)text[pos])) {
      value = value * 10 + (text[pos++] - '0');
      if (value > kMaxElements)
        error("dimension too large");
    }
    return value;
  }

  std::string_view text;
  const std::string &path;
  size_t pos = 0;
};

//===----------------------------------------------------------------------===//
// File layout
//===----------------------------------------------------------------------===//

uint32_t readLittleEndian(const std::string &bytes, size_t offset,
                          size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint32_t((unsigned char)bytes[offset + i]) << (8 * i);
  return value;
}

/// Checks the magic and version and returns the header text and the offset
/// of the data.
std::pair<std::string_view, size_t> splitFile(const std::string &contents,
                                              const std::string &path) {
  if (contents.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    fail(path, ": not a .npy file (bad magic)");
  if (contents.size() < kMagicSize + 2)
    fail(path, ": truncated header");
  int major = (unsigned char)contents[kMagicSize];
  int minor = (unsigned char)contents[kMagicSize + 1];
  if ((major != 1 && major != 2) || minor != 0)
    fail(path, ": unsupported .npy format version ", major, ".", minor,
         " (supported: 1.0, 2.0)");
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = kMagicSize + 2 + lengthWidth;
  if (contents.size() < headerStart)
    fail(path, ": truncated header");
  size_t headerLength = readLittleEndian(contents, kMagicSize + 2, lengthWidth);
  if (contents.size() - headerStart < headerLength)
    fail(path, ": truncated header (", headerLength, " bytes announced, ",
         contents.size() - headerStart, " present)");
  std::string_view header(contents.data() + headerStart, headerLength);
  return {header, headerStart + headerLength};
}

std::string supportedDescrs() {
  return "<f8 <f4 <f2 <i8 <i4 |i1, <u2 (bf16 bits), |u1 (read as i8)";
}
} // namespace

const char *qattn::rt::npyDescr(DType dtype) {
  for (const DescrEntry &entry : kDescrs)
    if (entry.dtype == dtype)
      return entry.descr;
  return "?"; // Unreachable: kDescrs lists every DType.
}

Tensor qattn::rt::readNpy(const std::string &path) {
  std::string contents = readFile(path);
  auto [headerText, dataOffset] = splitFile(contents, path);
  NpyHeader header = HeaderParser(headerText, path).parse();

  std::optional<DType> dtype = dtypeForDescr(header.descr);
  if (!dtype)
    fail(path, ": unsupported dtype '", header.descr,
         "' (supported: ", supportedDescrs(), ")");
  if (header.fortranOrder)
    fail(path, ": Fortran-order arrays are not supported; save a C-order "
               "array (numpy.ascontiguousarray)");
  std::optional<int64_t> count = numElements(header.shape);
  if (!count)
    fail(path, ": shape ", formatShape(header.shape), " is too large");

  // The sizes against the file before anything is allocated: a header may
  // claim gigabytes that a file of a few bytes does not hold.
  size_t expected = size_t(*count) * dtypeSize(*dtype);
  size_t present = contents.size() - dataOffset;
  if (present < expected)
    fail(path, ": truncated data: shape ", formatShape(header.shape), " of ",
         header.descr, " needs ", expected, " bytes, the file has ", present);
  if (present > expected)
    fail(path, ": ", present - expected, " unexpected bytes after the data");
  Tensor tensor(*dtype, header.shape);
  std::memcpy(tensor.data(), contents.data() + dataOffset, expected);
  return tensor;
}

namespace {
std::string headerFor(const Tensor &tensor) {
  std::string shape = "(";
  for (int64_t size : tensor.getShape())
    shape += std::to_string(size) + ", ";
  // NumPy spells a 1-tuple "(n,)" and other tuples without a trailing comma.
  if (tensor.getShape().size() == 1)
    shape.pop_back();
  else if (!tensor.getShape().empty())
    shape.resize(shape.size() - 2);
  shape += ")";
  return std::string("{'descr': '") + npyDescr(tensor.getDType()) +
         "', 'fortran_order': False, 'shape': " + shape + ", }";
}

/// The bytes in front of the data: magic, version, length and padded header.
std::string preamble(const Tensor &tensor) {
  std::string header = headerFor(tensor);
  bool needsV2 = header.size() + 1 + kMagicSize + 4 > 0xffff;
  size_t lengthWidth = needsV2 ? 4 : 2;
  size_t unpadded = kMagicSize + 2 + lengthWidth + header.size() + 1;
  header.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  header += '\n';

  std::string out(kMagic, kMagicSize);
  out += char(needsV2 ? 2 : 1);
  out += char(0);
  for (size_t i = 0; i < lengthWidth; ++i)
    out += char((header.size() >> (8 * i)) & 0xff);
  return out + header;
}
} // namespace

void qattn::rt::writeNpy(const std::string &path, const Tensor &tensor) {
  std::string head = preamble(tensor);
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    fail(path, ": cannot create: ", std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), file) == head.size() &&
            std::fwrite(tensor.data(), 1, tensor.getByteSize(), file) ==
                tensor.getByteSize();
  // fclose flushes, so its result tells whether the data reached the file.
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    fail(path, ": cannot write: ", std::strerror(errno));
}
