//===- Json.h - A small JSON parser -----------------------------*- C++ -*-===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//
//
// Just enough JSON (RFC 8259) to read an artifact's manifest without pulling
// in a library: objects, arrays, strings with every escape, numbers, true,
// false and null. Syntax errors give the file, line and column.
//
//===----------------------------------------------------------------------===//

#ifndef QATTN_RUNTIME_JSON_H
#define QATTN_RUNTIME_JSON_H

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qattn::rt::json {

class Value;
struct Member;
using Array = std::vector<Value>;
/// Members in the order they appear in the text; keys are unique.
using Object = std::vector<Member>;

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Value() = default;
  explicit Value(bool value) : data(value) {}
  explicit Value(double value) : data(value) {}
  explicit Value(std::string value) : data(std::move(value)) {}
  explicit Value(Array value) : data(std::move(value)) {}
  explicit Value(Object value) : data(std::move(value)) {}

  Kind getKind() const { return Kind(data.index()); }
  bool is(Kind kind) const { return getKind() == kind; }

  /// Accessors for the value of the matching kind; calling one for another
  /// kind is a programming error (std::bad_variant_access).
  bool getBool() const { return std::get<bool>(data); }
  double getNumber() const { return std::get<double>(data); }
  const std::string &getString() const { return std::get<std::string>(data); }
  const Array &getArray() const { return std::get<Array>(data); }
  const Object &getObject() const { return std::get<Object>(data); }

  /// The member `key` of an object; nullptr if absent.
  const Value *find(std::string_view key) const;

private:
  // The alternatives are in Kind's order, so that index() is the Kind.
  std::variant<std::monostate, bool, double, std::string, Array, Object> data;
};

struct Member {
  std::string key;
  Value value;
};

/// A kind's name for messages: "null", "a boolean", "a number", ...
const char *describe(Value::Kind kind);

/// Parses `text`, a complete JSON document. Throws Error with the message
/// "FILENAME:LINE:COLUMN: what is wrong" on a syntax error, a duplicate key,
/// a number out of double's range, or nesting deeper than 256 levels.
Value parse(std::string_view text, const std::string &filename);

} // namespace qattn::rt::json

#endif // QATTN_RUNTIME_JSON_H
