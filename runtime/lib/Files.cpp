//===- Files.cpp - Reading whole files ------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "Files.h"

#include "qattn/Runtime/Error.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

using namespace qattn::rt;

namespace {
struct FileCloser {
  void operator()(std::FILE *file) const { std::fclose(file); }
};
} // namespace

std::string qattn::rt::readFile(const std::string &path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file)
    fail(path, ": cannot open: ", std::strerror(errno));
  std::string contents;
  std::array<char, 1 << 16> chunk;
  size_t got;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), file.get())) > 0)
    contents.append(chunk.data(), got);
  // fread reports EISDIR for a directory, which fopen accepted.
  if (std::ferror(file.get()))
    fail(path, ": cannot read: ", std::strerror(errno));
  return contents;
}
