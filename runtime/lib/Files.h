//===- Files.h - Reading whole files ----------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_LIB_FILES_H
#define QATTN_RUNTIME_LIB_FILES_H

#include <string>

namespace qattn::rt {

/// The contents of the file at `path`. Throws Error naming the file and the
/// system's reason if it cannot be opened or read (a directory cannot).
std::string readFile(const std::string &path);

} // namespace qattn::rt

#endif // QATTN_RUNTIME_LIB_FILES_H
