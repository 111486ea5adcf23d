//===- Json.cpp - A small JSON parser -------------------------------------===//
//
// Part of the qattn project.
//
//===----------------------------------------------------------------------===//

#include "qattn/Runtime/Json.h"

#include "qattn/Runtime/Error.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

using namespace qattn::rt;
using namespace qattn::rt::json;

const Value *Value::find(std::string_view key) const {
  for (const Member &member : getObject())
    if (member.key == key)
      return &member.value;
  return nullptr;
}

const char *json::describe(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return "a boolean";
  case Value::Kind::Number:
    return "a number";
  case Value::Kind::String:
    return "a string";
  case Value::Kind::Array:
    return "an array";
  case Value::Kind::Object:
    return "an object";
  }
  return "?"; // Unreachable: the switch covers every Kind.
}

namespace {
/// Recursive descent over the grammar of RFC 8259. The depth limit keeps a
/// hostile document from overflowing the stack.
class Parser {
public:
  Parser(std::string_view text, const std::string &filename)
      : text(text), filename(filename) {}

  Value parseDocument() {
    Value value = parseValue();
    skipSpace();
    if (pos != text.size())
      error("unexpected text after the JSON value");
    return value;
  }

private:
  static constexpr int kMaxDepth = 256;

  [[noreturn]] void error(const std::string &what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    fail(filename, ":", line, ":", column, ": ", what);
  }

  bool atEnd() const { return pos >= text.size(); }
  /// The next character, or '\0' at the end, which no rule of the grammar
  /// accepts (strings check for the end themselves).
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos;
  }

  bool consume(char c) {
    skipSpace();
    if (peek() != c)
      return false;
    ++pos;
    return true;
  }

  void expect(char c, const char *context) {
    if (!consume(c))
      error(std::string("expected '") + c + "' " + context);
  }

  Value parseValue() {
    skipSpace();
    if (atEnd())
      error("unexpected end of input, expected a value");
    char c = peek();
    if (c == '{' || c == '[') {
      if (++depth > kMaxDepth)
        error("nesting deeper than 256 levels");
      Value value = c == '{' ? parseObject() : parseArray();
      --depth;
      return value;
    }
    if (c == '"')
      return Value(parseString());
    if (c == '-' || (c >= '0' && c <= '9'))
      return Value(parseNumber());
    if (consumeWord("true"))
      return Value(true);
    if (consumeWord("false"))
      return Value(false);
    if (consumeWord("null"))
      return Value();
    error("expected a value");
  }

  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  Value parseObject() {
    ++pos; // '{'
    Object members;
    if (consume('}'))
      return Value(std::move(members));
    do {
      skipSpace();
      if (peek() != '"')
        error("expected a string as object key");
      size_t keyPos = pos;
      std::string key = parseString();
      for (const Member &member : members)
        if (member.key == key) {
          pos = keyPos;
          error("duplicate key \"" + key + "\"");
        }
      expect(':', "after object key");
      members.push_back({std::move(key), parseValue()});
    } while (consume(','));
    expect('}', "or ',' in object");
    return Value(std::move(members));
  }

  Value parseArray() {
    ++pos; // '['
    Array elements;
    if (consume(']'))
      return Value(std::move(elements));
    do
      elements.push_back(parseValue());
    while (consume(','));
    expect(']', "or ',' in array");
    return Value(std::move(elements));
  }

  double parseNumber() {
    size_t start = pos;
    consumeWord("-");
    if (!consumeWord("0") && !consumeDigits())
      error("expected digits in number");
    if (consumeWord(".") && !consumeDigits())
      error("expected digits after '.' in number");
    if (consumeWord("e") || consumeWord("E")) {
      if (!consumeWord("+"))
        consumeWord("-");
      if (!consumeDigits())
        error("expected digits in exponent");
    }
    // The grammar above admits only what strtod reads in the "C" locale,
    // which a program has until it calls setlocale.
    std::string spelling(text.substr(start, pos - start));
    double value = std::strtod(spelling.c_str(), nullptr);
    if (std::isinf(value)) {
      pos = start;
      error("number " + spelling + " is out of range");
    }
    return value;
  }

  bool consumeDigits() {
    size_t start = pos;
    while (peek() >= '0' && peek() <= '9')
      ++pos;
    return pos > start;
  }

  std::string parseString() {
    ++pos; // '"'
    std::string value;
    while (true) {
      if (atEnd())
        error("unterminated string");
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return value;
      }
      if ((unsigned char)c < 0x20)
        error("control character in string; escape it");
      ++pos;
      if (c == '\\')
        parseEscape(value);
      else
        value += c;
    }
  }

  void parseEscape(std::string &out) {
    if (atEnd())
      error("unterminated string");
    char c = text[pos++];
    switch (c) {
    case '"':
    case '\\':
    case '/':
      out += c;
      return;
    case 'b':
      out += '\b';
      return;
    case 'f':
      out += '\f';
      return;
    case 'n':
      out += '\n';
      return;
    case 'r':
      out += '\r';
      return;
    case 't':
      out += '\t';
      return;
    case 'u':
      appendUtf8(out, parseCodePoint());
      return;
    default:
      pos -= 2; // Point at the backslash.
      error(std::string("invalid escape '\\") + c + "'");
    }
  }

  /// Reads the hex digits after "\u", and a second "\uXXXX" if the first is
  /// a high surrogate, and returns the code point they encode.
  uint32_t parseCodePoint() {
    uint32_t unit = parseHex4();
    if (unit >= 0xDC00 && unit <= 0xDFFF)
      error("unpaired low surrogate in \\u escape");
    if (unit < 0xD800 || unit > 0xDBFF)
      return unit;
    if (!consumeWord("\\u"))
      error("high surrogate not followed by a \\u low surrogate");
    uint32_t low = parseHex4();
    if (low < 0xDC00 || low > 0xDFFF)
      error("high surrogate not followed by a low surrogate");
    return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
  }

  uint32_t parseHex4() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i, ++pos) {
      char c = peek();
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0)
        error("expected 4 hex digits after \\u");
      value = value * 16 + uint32_t(digit);
    }
    return value;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | cp >> 6);
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | cp >> 12);
      out += char(0x80 | (cp >> 6 & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | cp >> 18);
      out += char(0x80 | (cp >> 12 & 0x3F));
      out += char(0x80 | (cp >> 6 & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string_view text;
  const std::string &filename;
  size_t pos = 0;
  int depth = 0;
};
} // namespace

Value json::parse(std::string_view text, const std::string &filename) {
  return Parser(text, filename).parseDocument();
}
