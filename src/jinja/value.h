// Value: what a template expression evaluates to. Models the Python objects a
// template sees under jinja2 — None, bool, int, float, str, list, tuple, dict
// (insertion-ordered, as Python dicts are), namespace, callables — plus
// jinja2's Undefined. Lists, dicts and namespaces are shared by reference, as
// in Python, so `ns.x = ...` through one name is seen through another.
// Strings are Texts: they carry which of their bytes came from data (text.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jinja/text.h"

namespace ladder::jinja {

class Value;
using List = std::vector<Value>;

// An insertion-ordered map; keys are Values (str, int, ...) compared by Python
// equality. Chat-template dicts are small, so look-up is a linear scan.
struct Dict {
  std::vector<std::pair<Value, Value>> entries;

  const Value* find(const Value& key) const;
  Value* find(const Value& key);
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // Takes the argument at `index` or named `name` (removing it); nullptr when absent.
  const Value* get(size_t index, std::string_view name) const;
};

using NativeFn = std::function<Result<Value>(const CallArgs&)>;

struct Callable {
  std::string name;  // for error messages and str()
  NativeFn fn;
};

// kIterator is what jinja2's map/select/... filters return: a Python
// generator, without len(), not JSON-serializable, that fails only when
// consumed (it holds the items made before the error, and the error).
// kDictView is what dict.keys() / values() / items() return.
enum class Kind {
  kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kIterator, kDictView, kDict, kNamespace, kCallable
};

// Python's type name of a kind ("NoneType", "str", ...), used in error messages.
const char* kind_type_name(Kind kind);

class Value {
 public:
  // An Undefined. `name` is what was looked up (for "'x' is undefined"); a
  // non-empty `error` replaces that message (e.g. unsafe attribute access).
  Value() = default;
  static Value undefined(std::string name, std::string error = "");
  static Value none();
  Value(bool b);            // NOLINT(google-explicit-constructor)
  Value(int64_t i);         // NOLINT(google-explicit-constructor)
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT(google-explicit-constructor)
  Value(double f);          // NOLINT(google-explicit-constructor)
  // A string of template origin.
  Value(std::string s);     // NOLINT(google-explicit-constructor)
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  // A string with its marks.
  Value(Text t);            // NOLINT(google-explicit-constructor)
  static Value list(List items = {});
  static Value tuple(List items);
  // A generator; `deferred` is the error it raises when consumed past `items`.
  static Value iterator(List items, Status deferred = Status::ok());
  // dict_keys / dict_values / dict_items over `items`.
  static Value dict_view(std::string name, List items);
  static Value dict(Dict d = {});
  static Value namespace_object(Dict attributes);
  static Value callable(std::string name, NativeFn fn);
  // JSON -> Value (objects keep their key order); every string in it (keys
  // included) gets `origin`.
  static Value from_json(const nlohmann::ordered_json& j, Origin origin = Origin::kTemplate);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // int, float or bool (bool is an int in Python).
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_iterator() const { return kind_ == Kind::kIterator; }
  bool is_dict_view() const { return kind_ == Kind::kDictView; }
  bool is_sequence_like() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return s_ ? s_->bytes() : empty_string(); }
  // A string's bytes with their marks.
  const Text& as_text() const { return s_ ? *s_ : empty_text(); }
  // "'x' is undefined", or the custom error.
  std::string undefined_message() const;

  List& items() const { return *static_cast<List*>(obj_.get()); }  // list, tuple, iterator or dict view
  // An iterator's deferred error (ok when it has none).
  const Status& deferred_error() const { return error_ && kind_ == Kind::kIterator ? *error_ : ok_status(); }
  // A dict view's type name ("dict_keys", ...).
  const std::string& view_name() const { return as_string(); }
  Dict& mapping() const { return *static_cast<Dict*>(obj_.get()); }  // dict or namespace
  const Callable& function() const { return *static_cast<const Callable*>(obj_.get()); }

  // Python truthiness (Undefined is false).
  bool truthy() const;
  // Python str() / repr(), with the marks of the strings they print (a
  // string's repr is data when any of its bytes is). str() of an Undefined is "".
  Text to_text() const;
  Text repr_text() const;
  // Appends str() to `out` (without copying a string first).
  void append_to(TextBuilder& out) const;
  // The same, bytes only (for messages, keys and comparisons).
  std::string str() const { return kind_ == Kind::kString ? as_string() : to_text().bytes(); }
  std::string repr() const { return repr_text().bytes(); }
  // Python == (1 == 1.0 == True, containers element-wise, dicts ignore order).
  bool equals(const Value& other) const;
  // Identity of shared containers (Python `is`).
  bool same_object(const Value& other) const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  static const std::string& empty_string();
  static const Text& empty_text();
  static const Status& ok_status();

  // Strings are immutable and shared, so copying a Value (which templates do
  // at every variable read) never copies text.
  std::shared_ptr<const Text> s_;             // string, the Undefined's name, or a dict view's type name
  // An Undefined's custom error, or an iterator's error when consumed.
  std::shared_ptr<const Status> error_;
  // The List, Dict or Callable, by kind: one pointer keeps Values small,
  // and templates copy Values at every variable read.
  std::shared_ptr<void> obj_;
};

// Python's type name of a value ("str", "list", ...), for error messages.
inline std::string type_name(const Value& v) { return kind_type_name(v.kind()); }

// Python's repr() of a float ("1.0", "0.1", "1e+16", "inf").
std::string python_float_repr(double f);
// Python's repr() of a str: quotes chosen like CPython, escapes for control chars.
std::string python_string_repr(std::string_view s);

// Number of Unicode code points of a UTF-8 string; and the byte offsets of
// each code point (size + 1 entries, the last being s.size()).
size_t utf8_length(std::string_view s);
std::vector<size_t> utf8_offsets(std::string_view s);

}  // namespace ladder::jinja
