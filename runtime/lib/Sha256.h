//===- Sha256.h - SHA-256 of artifact files ---------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The manifest records the SHA-256 of the library (and of the PTX) that
// qattn-compile wrote, so that the runtime refuses a library that is not the
// one its manifest describes before dlopen or the CUDA driver reads it
// (docs/ARTIFACT.md). The runtime builds without LLVM, so it has its own
// small implementation of FIPS 180-4; the compiler uses llvm::SHA256.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_LIB_SHA256_H
#define QATTN_RUNTIME_LIB_SHA256_H

#include <string>
#include <string_view>

namespace qattn::rt {

/// The SHA-256 digest of `data` as 64 lowercase hexadecimal digits.
std::string sha256Hex(std::string_view data);

/// Whether `text` looks like sha256Hex's output.
bool isSha256Hex(std::string_view text);

/// Throws Error unless the SHA-256 of `contents`, the bytes of the file at
/// `path`, is `expected`; `field` is the manifest key that recorded it.
void checkSha256(std::string_view contents, const std::string &path,
                 const std::string &expected, const char *field);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_LIB_SHA256_H
