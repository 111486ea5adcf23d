//===- Error.h - Runtime errors ---------------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// The runtime reports every problem with its input (files, manifests, shapes)
// by throwing qattn::rt::Error with a message meant for the user. The runtime
// has no LLVM to lend it llvm::Error, and these failures are rare and end the
// operation, so an exception that the tool catches once at the top is the
// simplest way to get the message out without threading status codes through
// every parser.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_ERROR_H
#define QATTN_RUNTIME_ERROR_H

#include <sstream>
#include <stdexcept>
#include <string>

namespace qattn::rt {

/// An error in the runtime's input, with a message for the user.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws an Error whose message is the concatenation of `parts` as an
/// ostream would print them.
template <typename... Parts> [[noreturn]] void fail(const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

} // namespace qattn::rt

#endif // QATTN_RUNTIME_ERROR_H
