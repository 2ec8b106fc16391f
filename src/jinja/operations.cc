#include "jinja/operations.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/text_ops.h"

namespace ladder::jinja {
namespace {

Status unsupported(std::string_view op, const Value& a, const Value& b) {
  return invalid_argument("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) + "' and '" +
                          type_name(b) + "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Python ints are unbounded; ours are 64-bit, and overflowing one is an
// error rather than undefined behaviour.
Status overflow(std::string_view op) {
  return out_of_range("integer overflow in '" + std::string(op) + "' (chat templates use 64-bit integers)");
}

Result<Value> checked_int(std::string_view op, int64_t a, int64_t b) {
  int64_t r = 0;
  bool bad = op == "+" ? __builtin_add_overflow(a, b, &r) : op == "-" ? __builtin_sub_overflow(a, b, &r)
                                                                      : __builtin_mul_overflow(a, b, &r);
  if (bad) return overflow(op);
  return Value(r);
}

Result<Value> int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {  // square-and-multiply: O(log exp) steps
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) return overflow("**");
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return overflow("**");
  }
  return Value(result);
}

Result<Value> repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  uint64_t unit = seq.is_string() ? seq.as_string().size() : seq.items().size() * sizeof(Value);
  if (unit > 0 && static_cast<uint64_t>(n) > kMaxBuiltStringBytes / unit) {
    return out_of_range("sequence repetition would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
  }
  if (seq.is_string()) {
    TextBuilder out;
    for (int64_t i = 0; i < n; ++i) out.append(seq.as_text());
    return Value(out.take());
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// printf-style `"%s" % args` for the conversions templates use.
Result<Value> percent_format(const Text& fmt, const Value& args) {
  List values = args.is_tuple() ? args.items() : List{args};
  size_t next = 0;
  TextBuilder out;
  const std::string& f = fmt.bytes();
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.append(fmt, i, 1);
      continue;
    }
    if (++i >= f.size()) return invalid_argument("incomplete format");
    if (f[i] == '%') {
      out.append(fmt, i, 1);
      continue;
    }
    if (next >= values.size()) return invalid_argument("not enough arguments for format string");
    const Value& v = values[next++];
    switch (f[i]) {
      case 's': v.append_to(out); break;
      case 'r': out.append(v.repr_text()); break;
      case 'd':
      case 'i':
        if (!v.is_number()) return invalid_argument("%d format: a real number is required, not " + type_name(v));
        if (v.is_float() && !(std::fabs(v.as_double()) < 9.2e18)) return out_of_range("%d format: number out of range");
        out.append(std::to_string(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int()));
        break;
      case 'f': {
        if (!v.is_number()) return invalid_argument("must be real number, not " + type_name(v));
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%f", v.as_double());
        out.append(buf);
        break;
      }
      default: return unimplemented(std::string("format conversion '%") + f[i] + "' is not supported");
    }
  }
  // Left-over arguments are an error, except one list or dict argument
  // (CPython treats it as a mapping for %(name)s and does not count it).
  if (next < values.size() && (args.is_tuple() || !(args.is_list() || args.is_dict()))) {
    return invalid_argument("not all arguments converted during string formatting");
  }
  return Value(out.take());
}

void append_u_escape(std::string& out, uint32_t unit) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\u%04x", unit & 0xffffu);
  out += buf;
}

// The JSON escape of s, without quotes.
std::string json_escape(std::string_view s, bool ensure_ascii) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (ensure_ascii && c >= 0x80) {
      // Decode one UTF-8 sequence; escape it as Python does (surrogate pairs above U+FFFF).
      size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      uint32_t cp = len == 1 ? c : (c & (0x7F >> len));
      for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      i += len - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        append_u_escape(out, 0xD800 + (cp >> 10));
        append_u_escape(out, 0xDC00 + (cp & 0x3FF));
      } else {
        append_u_escape(out, cp);
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[16];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// A JSON string: each piece escaped on its own keeps the marks exact; the
// quotes are data when the string has data.
void append_json_string(TextBuilder& out, const Text& s, bool ensure_ascii) {
  const bool all_data = s.data().size() == 1 && s.data()[0] == ByteRange{0, s.size()};
  if (!s.has_data() || all_data) {
    // One origin (almost every string): no pieces to keep apart.
    std::string quoted = "\"" + json_escape(s.bytes(), ensure_ascii) + "\"";
    out.append(quoted, all_data ? Origin::kData : Origin::kTemplate);
    return;
  }
  out.append('"', Origin::kData);
  out.append(map_pieces(s, [&](std::string_view piece) { return json_escape(piece, ensure_ascii); }));
  out.append('"', Origin::kData);
}

Result<Text> json_key(const Value& k) {
  switch (k.kind()) {
    case Kind::kString: return k.as_text();
    case Kind::kBool: return Text(k.as_bool() ? "true" : "false");
    case Kind::kInt: return Text(std::to_string(k.as_int()));
    case Kind::kFloat: return Text(python_float_repr(k.as_double()));
    case Kind::kNone: return Text("null");
    default: return invalid_argument("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

Status dump(TextBuilder& out, const Value& v, const JsonDumpOptions& o, int level) {
  if (out.size() > kMaxBuiltStringBytes) {
    return out_of_range("tojson: output would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
  }
  auto newline_indent = [&](int lvl) {
    out.append('\n');
    for (int i = 0; i < lvl; ++i) out.append(o.indent);
  };
  switch (v.kind()) {
    case Kind::kNone: out.append("null"); return Status::ok();
    case Kind::kBool: out.append(v.as_bool() ? "true" : "false"); return Status::ok();
    case Kind::kInt: out.append(std::to_string(v.as_int())); return Status::ok();
    case Kind::kFloat: {
      double f = v.as_double();
      if (std::isnan(f)) out.append("NaN");
      else if (std::isinf(f)) out.append(f > 0 ? "Infinity" : "-Infinity");
      else out.append(python_float_repr(f));
      return Status::ok();
    }
    case Kind::kString: append_json_string(out, v.as_text(), o.ensure_ascii); return Status::ok();
    case Kind::kList:
    case Kind::kTuple: {
      const List& items = v.items();
      if (items.empty()) {
        out.append("[]");
        return Status::ok();
      }
      out.append('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out.append(o.item_separator);
        if (o.has_indent) newline_indent(level + 1);
        LADDER_RETURN_IF_ERROR(dump(out, items[i], o, level + 1));
      }
      if (o.has_indent) newline_indent(level);
      out.append(']');
      return Status::ok();
    }
    case Kind::kDict: {
      std::vector<std::pair<Text, const Value*>> entries;
      for (const auto& [k, val] : v.mapping().entries) {
        LADDER_ASSIGN_OR_RETURN(Text key, json_key(k));
        entries.emplace_back(std::move(key), &val);
      }
      if (entries.empty()) {
        out.append("{}");
        return Status::ok();
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first.bytes() < b.first.bytes(); });
      }
      out.append('{');
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out.append(o.item_separator);
        if (o.has_indent) newline_indent(level + 1);
        append_json_string(out, entries[i].first, o.ensure_ascii);
        out.append(o.key_separator);
        LADDER_RETURN_IF_ERROR(dump(out, *entries[i].second, o, level + 1));
      }
      if (o.has_indent) newline_indent(level);
      out.append('}');
      return Status::ok();
    }
    default:
      return invalid_argument("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

Status undefined_error(const Value& v) { return invalid_argument(v.undefined_message()); }

Result<Value> binary_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "~" || (op == "+" && a.is_string() && b.is_string())) {
    if (a.as_string().size() + b.as_string().size() > kMaxBuiltStringBytes) {
      return out_of_range("string concatenation would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
    }
    TextBuilder out;
    a.append_to(out);
    b.append_to(out);
    if (out.size() > kMaxBuiltStringBytes) {
      return out_of_range("string concatenation would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
    }
    return Value(out.take());
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  bool nums = a.is_number() && b.is_number();
  bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (nums) return any_float ? Value(a.as_double() + b.as_double()) : checked_int(op, a.as_int(), b.as_int());
    if (a.kind() == b.kind() && a.is_sequence_like()) {
      List out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.is_string()) return invalid_argument("can only concatenate str (not \"" + type_name(b) + "\") to str");
    if (a.is_list()) return invalid_argument("can only concatenate list (not \"" + type_name(b) + "\") to list");
    return unsupported(op, a, b);
  }
  if (op == "-") {
    if (nums) return any_float ? Value(a.as_double() - b.as_double()) : checked_int(op, a.as_int(), b.as_int());
    return unsupported(op, a, b);
  }
  if (op == "*") {
    if (nums) return any_float ? Value(a.as_double() * b.as_double()) : checked_int(op, a.as_int(), b.as_int());
    if ((a.is_string() || a.is_sequence_like()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_sequence_like()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    return unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) return unsupported(op, a, b);
    if (b.as_double() == 0) return invalid_argument("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) return percent_format(a.as_text(), b);
    if (!nums) return unsupported(op, a, b);
    if (b.as_double() == 0) return invalid_argument(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
    if (any_float) {
      double x = a.as_double(), y = b.as_double();
      double q = std::floor(x / y);
      return op == "//" ? Value(q) : Value(x - q * y);
    }
    if (a.as_int() == INT64_MIN && b.as_int() == -1) {
      if (op == "%") return Value(int64_t{0});
      return overflow(op);
    }
    return op == "//" ? Value(floor_div(a.as_int(), b.as_int())) : Value(floor_mod(a.as_int(), b.as_int()));
  }
  if (op == "**") {
    if (!nums) return unsupported(op, a, b);
    if (!any_float && b.as_int() >= 0) return int_pow(a.as_int(), b.as_int());
    double x = a.as_double(), y = b.as_double();
    if (x == 0 && y < 0) return invalid_argument("0.0 cannot be raised to a negative power");
    if (x < 0 && y != std::floor(y)) return unimplemented("a negative number to a fractional power is complex");
    return Value(std::pow(x, y));
  }
  return internal_error("unknown operator " + std::string(op));
}

Result<bool> less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.kind() == b.kind() && a.is_sequence_like()) {
    const List& x = a.items();
    const List& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  return invalid_argument("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Result<bool> compare_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return a.equals(b);
  if (op == "!=") return !a.equals(b);
  if (op == "<") return less_than(a, b);
  if (op == ">") return less_than(b, a);
  if (op == "<=") {
    if (a.equals(b) && (a.is_number() || a.is_string() || a.is_sequence_like())) return true;
    return less_than(a, b);
  }
  if (op == ">=") {
    if (a.equals(b) && (a.is_number() || a.is_string() || a.is_sequence_like())) return true;
    return less_than(b, a);
  }
  if (op == "in") return contains(b, a);
  if (op == "notin") {
    LADDER_ASSIGN_OR_RETURN(bool in, contains(b, a));
    return !in;
  }
  return internal_error("unknown comparison " + std::string(op));
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string()) {
        return invalid_argument("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDictView:
    case Kind::kIterator:
      for (const Value& v : container.items()) {
        if (v.equals(item)) return true;
      }
      // A generator that fails later fails the search that reaches the failure.
      if (!container.deferred_error().is_ok()) return container.deferred_error();
      return false;
    case Kind::kDict: return container.mapping().find(item) != nullptr;
    case Kind::kUndefined: return false;
    default: return invalid_argument("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Result<List> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDictView: return v.items();
    case Kind::kIterator:
      if (!v.deferred_error().is_ok()) return v.deferred_error();
      return v.items();
    case Kind::kDict: {
      List keys;
      for (const auto& [k, _] : v.mapping().entries) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      List chars;
      for (Text& c : text_chars(v.as_text())) chars.emplace_back(std::move(c));
      return chars;
    }
    case Kind::kUndefined: return List{};
    default: return invalid_argument("'" + type_name(v) + "' object is not iterable");
  }
}

Result<int64_t> length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::kString: return static_cast<int64_t>(utf8_length(v.as_string()));
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDictView: return static_cast<int64_t>(v.items().size());
    case Kind::kDict: return static_cast<int64_t>(v.mapping().entries.size());
    case Kind::kUndefined: return int64_t{0};
    default: return invalid_argument("object of type '" + type_name(v) + "' has no len()");
  }
}

Result<Text> json_dumps(const Value& v, const JsonDumpOptions& options) {
  TextBuilder out;
  LADDER_RETURN_IF_ERROR(dump(out, v, options, 0));
  return out.take();
}

}  // namespace ladder::jinja
