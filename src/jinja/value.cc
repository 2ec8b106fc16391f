#include "jinja/value.h"

#include "jinja/string_util.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ladder::jinja {

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (k.equals(key)) return &v;
  }
  return nullptr;
}

Value* Dict::find(const Value& key) {
  for (auto& [k, v] : entries) {
    if (k.equals(key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  if (Value* slot = find(key)) {
    *slot = std::move(value);
    return;
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

const char* kind_type_name(Kind kind) {
  switch (kind) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kIterator: return "generator";
    case Kind::kDictView: return "dict_view";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

Value Value::undefined(std::string name, std::string error) {
  Value v;
  if (!name.empty()) v.s_ = std::make_shared<const Text>(std::move(name));
  if (!error.empty()) v.error_ = std::make_shared<const Status>(invalid_argument(std::move(error)));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::make_shared<const Text>(std::move(s))) {}
Value::Value(Text t) : kind_(Kind::kString), s_(std::make_shared<const Text>(std::move(t))) {}

const std::string& Value::empty_string() {
  static const std::string kEmpty;
  return kEmpty;
}

const Text& Value::empty_text() {
  static const Text kEmpty;
  return kEmpty;
}

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::kList;
  v.obj_ = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::iterator(List items, Status deferred) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kIterator;
  if (!deferred.is_ok()) v.error_ = std::make_shared<const Status>(std::move(deferred));
  return v;
}

Value Value::dict_view(std::string name, List items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kDictView;
  v.s_ = std::make_shared<const Text>(std::move(name));
  return v;
}

const Status& Value::ok_status() {
  static const Status kOk = Status::ok();
  return kOk;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.obj_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::namespace_object(Dict attributes) {
  Value v = dict(std::move(attributes));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.obj_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j, Origin origin) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      // Beyond int64 Python keeps an exact int; a double is the closest we hold.
      return u > static_cast<uint64_t>(INT64_MAX) ? Value(static_cast<double>(u)) : Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(Text(j.get<std::string>(), origin));
    case nlohmann::ordered_json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e, origin));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.entries.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.entries.emplace_back(Value(Text(k, origin)), from_json(e, origin));
      return dict(std::move(d));
    }
    default: return none();  // binary / discarded: not produced by the JSON parser
  }
}

std::string Value::undefined_message() const {
  if (error_) return error_->message();
  if (as_string().empty()) return "value is undefined";
  return "'" + as_string() + "' is undefined";
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDictView: return !items().empty();
    case Kind::kDict: return !mapping().entries.empty();
    case Kind::kIterator:
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

std::string python_float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest round-trip digits, as Python's repr uses; then Python's layout:
  // positional for 1e-4 <= |f| < 1e16, scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
  return out + ebuf;
}

std::string python_string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0xC0) {
      // A multi-byte character: kept as is when printable, else escaped as Python does.
      size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      if (i + len > s.size()) len = s.size() - i;
      uint32_t cp = c & (0x7F >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      if (cp_isprintable(cp)) {
        out.append(s.substr(i, len));
      } else {
        char buf[16];
        if (cp < 0x100) std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
        else if (cp < 0x10000) std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
        else std::snprintf(buf, sizeof(buf), "\\U%08x", cp);
        out += buf;
      }
      i += len - 1;
      continue;
    }
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

Text Value::to_text() const {
  switch (kind_) {
    case Kind::kUndefined: return Text();
    case Kind::kString: return as_text();
    default: return repr_text();
  }
}

void Value::append_to(TextBuilder& out) const {
  if (kind_ == Kind::kString) {
    out.append(as_text());
  } else if (kind_ != Kind::kUndefined) {
    out.append(repr_text());
  }
}

Text Value::repr_text() const {
  switch (kind_) {
    case Kind::kUndefined: return Text("Undefined");
    case Kind::kNone: return Text("None");
    case Kind::kBool: return Text(b_ ? "True" : "False");
    case Kind::kInt: return Text(std::to_string(i_));
    case Kind::kFloat: return Text(python_float_repr(f_));
    case Kind::kString: return derived_text(python_string_repr(as_string()), {&as_text()});
    case Kind::kList:
    case Kind::kTuple: {
      TextBuilder out;
      out.append(kind_ == Kind::kList ? "[" : "(");
      for (size_t i = 0; i < items().size(); ++i) {
        if (i) out.append(", ");
        out.append(items()[i].repr_text());
      }
      if (kind_ == Kind::kTuple && items().size() == 1) out.append(",");
      out.append(kind_ == Kind::kList ? "]" : ")");
      return out.take();
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      TextBuilder out;
      out.append(kind_ == Kind::kNamespace ? "<Namespace {" : "{");
      bool first = true;
      for (const auto& [k, v] : mapping().entries) {
        if (!first) out.append(", ");
        first = false;
        out.append(k.repr_text());
        out.append(": ");
        out.append(v.repr_text());
      }
      out.append(kind_ == Kind::kNamespace ? "}>" : "}");
      return out.take();
    }
    case Kind::kCallable:
      if (function().name.rfind("Macro ", 0) == 0 || function().name.rfind("built-in method ", 0) == 0) return Text("<" + function().name + ">");
      return Text("<function " + function().name + ">");
    case Kind::kIterator: return Text("<generator object>");
    case Kind::kDictView: {
      TextBuilder out;
      out.append(view_name() + "(");
      out.append(Value::list(items()).repr_text());
      out.append(")");
      return out.take();
    }
  }
  return Text();
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) return as_double() == other.as_double();
    return as_int() == other.as_int();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return s_ == other.s_ || as_string() == other.as_string();  // marks do not count
    case Kind::kList:
    case Kind::kTuple: {
      if (items().size() != other.items().size()) return false;
      for (size_t i = 0; i < items().size(); ++i) {
        if (!items()[i].equals(other.items()[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (mapping().entries.size() != other.mapping().entries.size()) return false;
      for (const auto& [k, v] : mapping().entries) {
        const Value* o = other.mapping().find(k);
        if (!o || !v.equals(*o)) return false;
      }
      return true;
    }
    case Kind::kNamespace:
    case Kind::kIterator: return obj_ == other.obj_;
    case Kind::kDictView: {
      // keys() and items() compare as sets; values() only by identity.
      if (obj_ == other.obj_) return true;
      if (view_name() != other.view_name() || view_name() == "dict_values") return false;
      if (items().size() != other.items().size()) return false;
      for (const Value& x : items()) {
        bool found = false;
        for (const Value& y : other.items()) found = found || x.equals(y);
        if (!found) return false;
      }
      return true;
    }
    case Kind::kCallable: return obj_ == other.obj_;
    default: return false;
  }
}

bool Value::same_object(const Value& other) const {
  if (kind_ != other.kind_) return false;
  if (obj_) return obj_ == other.obj_;
  return equals(other);
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
  }
  offsets.push_back(s.size());
  return offsets;
}

}  // namespace ladder::jinja
