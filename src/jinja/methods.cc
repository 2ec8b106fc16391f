// Attribute / item access and the Python methods of str, dict and list.
#include <optional>
#include <set>

#include "jinja/builtins.h"
#include "jinja/operations.h"
#include "jinja/string_util.h"
#include "jinja/text_ops.h"

namespace ladder::jinja {
namespace {

std::string object_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  return std::string("'") + kind_type_name(obj.kind()) + " object'";
}

Value missing_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(name, object_repr(obj) + " has no attribute '" + name + "'");
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attribute(obj, key.as_string());
  return Value::undefined(key.repr(), object_repr(obj) + " has no element " + key.repr());
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined(name, "access to attribute '" + name + "' of '" + kind_type_name(obj.kind()) +
                                    "' object is unsafe.");
}

Status check_arity(const std::string& method, const CallArgs& args, size_t max) {
  if (args.positional.size() + args.keyword.size() > max) {
    return invalid_argument(method + "() takes at most " + std::to_string(max) + " argument(s)");
  }
  return Status::ok();
}

Result<const std::string*> optional_string(const CallArgs& args, size_t index, const char* name, const char* method) {
  const Value* v = args.get(index, name);
  if (!v || v->is_none()) return static_cast<const std::string*>(nullptr);
  if (!v->is_string()) return invalid_argument(std::string(method) + " arg must be None or str");
  return &v->as_string();
}

Result<int64_t> optional_int(const CallArgs& args, size_t index, const char* name, int64_t fallback) {
  const Value* v = args.get(index, name);
  if (!v) return fallback;
  if (!v->is_int() && !v->is_bool()) return invalid_argument(std::string("'") + name + "' must be an integer");
  return v->as_int();
}

Value string_list(std::vector<Text> parts) {
  List out;
  for (Text& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

// Python str.format with automatic / positional / named fields ({}, {0}, {name}).
Result<Value> str_format(const Text& format, const CallArgs& args) {
  const std::string& fmt = format.bytes();
  TextBuilder out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out.append(format, i, 1);
      ++i;
      continue;
    }
    if (c != '{') {
      out.append(format, i, 1);
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.append(format, i, 1);
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) return invalid_argument("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) {
      return unimplemented("str.format field '{" + field + "}' with a format spec is not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      size_t idx = std::stoul(field);
      v = idx < args.positional.size() ? &args.positional[idx] : nullptr;
    } else {
      for (const auto& [k, val] : args.keyword) {
        if (k == field) v = &val;
      }
    }
    if (!v) return invalid_argument("str.format: no argument for field '{" + field + "}'");
    v->append_to(out);
    i = close;
  }
  return Value(out.take());
}

Result<Value> call_string_method(const Text& text, const std::string& name, const CallArgs& args) {
  const std::string& s = text.bytes();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    LADDER_RETURN_IF_ERROR(check_arity(name, args, 1));
    LADDER_ASSIGN_OR_RETURN(const std::string* chars, optional_string(args, 0, "chars", name.c_str()));
    return Value(text_strip(text, name != "rstrip", name != "lstrip", chars));
  }
  if (name == "split" || name == "rsplit") {
    LADDER_RETURN_IF_ERROR(check_arity(name, args, 2));
    LADDER_ASSIGN_OR_RETURN(const std::string* sep, optional_string(args, 0, "sep", name.c_str()));
    if (sep && sep->empty()) return invalid_argument("empty separator");
    LADDER_ASSIGN_OR_RETURN(int64_t maxsplit, optional_int(args, 1, "maxsplit", -1));
    return string_list(name == "split" ? text_split(text, sep, maxsplit) : text_rsplit(text, sep, maxsplit));
  }
  if (name == "splitlines") return string_list(text_splitlines(text));
  if (name == "startswith" || name == "endswith") {
    const Value* arg = args.get(0, "prefix");
    if (!arg) return invalid_argument(name + "() takes at least 1 argument (0 given)");
    List candidates = arg->is_tuple() ? arg->items() : List{*arg};
    for (const Value& c : candidates) {
      if (!c.is_string()) {
        return invalid_argument(name + " first arg must be str or a tuple of str, not " + kind_type_name(c.kind()));
      }
      const std::string& p = c.as_string();
      bool hit = name == "startswith" ? s.compare(0, p.size(), p) == 0
                                      : (s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0);
      if (hit) return Value(true);
    }
    return Value(false);
  }
  if (name == "replace") {
    const Value* old_v = args.get(0, "old");
    const Value* new_v = args.get(1, "new");
    if (!old_v || !new_v || !old_v->is_string() || !new_v->is_string()) {
      return invalid_argument("replace() expects two string arguments");
    }
    LADDER_ASSIGN_OR_RETURN(int64_t count, optional_int(args, 2, "count", -1));
    LADDER_ASSIGN_OR_RETURN(Text out, text_replace(text, old_v->as_text(), new_v->as_text(), count));
    return Value(std::move(out));
  }
  if (name == "upper") return Value(text_upper(text));
  if (name == "lower") return Value(text_lower(text));
  if (name == "title") return Value(text_title(text));
  if (name == "capitalize") return Value(text_capitalize(text));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const Value* sub = args.get(0, "sub");
    if (!sub || !sub->is_string()) return invalid_argument(name + "() expects a string argument");
    const std::string& t = sub->as_string();
    if (name == "count") {
      if (t.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(t); p != std::string::npos; p = s.find(t, p + t.size())) ++n;
      return Value(n);
    }
    size_t p = (name == "find" || name == "index") ? s.find(t) : s.rfind(t);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") return invalid_argument("substring not found");
      return Value(int64_t{-1});
    }
    return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
  }
  if (name == "join") {
    const Value* it = args.get(0, "iterable");
    if (!it) return invalid_argument("join() takes exactly one argument");
    LADDER_ASSIGN_OR_RETURN(List items, iterate(*it));
    TextBuilder out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return invalid_argument("sequence item " + std::to_string(i) + ": expected str instance, " +
                                kind_type_name(items[i].kind()) + " found");
      }
      if (i) out.append(text);
      out.append(items[i].as_text());
      if (out.size() > kMaxBuiltStringBytes) {
        return out_of_range("str.join: result would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
      }
    }
    return Value(out.take());
  }
  if (name == "format") return str_format(text, args);
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" ||
      name == "isupper") {
    return Value(py_str_is(s, name));
  }
  return unimplemented("str method '" + name + "' is not supported");
}

Result<Value> call_dict_method(const Value& d, const std::string& name, const CallArgs& args) {
  const Dict& dict = d.mapping();
  if (name == "get") {
    const Value* key = args.get(0, "key");
    if (!key) return invalid_argument("get expected at least 1 argument, got 0");
    const Value* found = dict.find(*key);
    if (found) return *found;
    const Value* fallback = args.get(1, "default");
    return fallback ? *fallback : Value::none();
  }
  if (name == "items" || name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : dict.entries) {
      if (name == "items") out.push_back(Value::tuple({k, v}));
      else out.push_back(name == "keys" ? k : v);
    }
    return Value::dict_view("dict_" + name, std::move(out));
  }
  if (name == "copy") return Value::dict(dict);
  return unimplemented("dict method '" + name + "' is not supported");
}

Result<Value> call_list_method(const Value& l, const std::string& name, const CallArgs& args) {
  const List& items = l.items();
  const Value* x = args.get(0, "value");
  if (name == "index" || name == "count") {
    if (!x) return invalid_argument(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].equals(*x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") return invalid_argument(x->repr() + " is not in list");
    return Value(n);
  }
  if (name == "copy") return Value::list(items);
  return unimplemented("list method '" + name + "' is not supported");
}

const std::set<std::string>& string_methods() {
  static const std::set<std::string> k = {"strip",      "lstrip",  "rstrip",  "split",   "rsplit", "splitlines",
                                          "startswith", "endswith", "replace", "upper",   "lower",  "title",
                                          "capitalize", "find",    "rfind",   "index",   "rindex", "count",
                                          "join",       "format",  "isdigit", "isalpha", "isalnum", "isspace",
                                          "islower",    "isupper"};
  return k;
}

// Python method names, safe ones first; mutating ones are refused by the
// immutable sandbox.
const std::set<std::string> kDictMethods = {"get", "items", "keys", "values", "copy"};
const std::set<std::string> kDictMutators = {"pop", "popitem", "setdefault", "update", "clear"};
const std::set<std::string> kListMethods = {"index", "count", "copy"};
const std::set<std::string> kListMutators = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

// Printed as Python prints a bound built-in method (without its address).
Value bound_method(const Value& obj, const std::string& name) {
  std::string label = "built-in method " + name + " of " + kind_type_name(obj.kind()) + " object";
  return Value::callable(label, [obj, name](const CallArgs& args) -> Result<Value> {
    if (obj.is_string()) return call_string_method(obj.as_text(), name, args);
    if (obj.is_dict()) return call_dict_method(obj, name, args);
    return call_list_method(obj, name, args);
  });
}

}  // namespace

std::vector<std::string> method_names(Kind kind) {
  switch (kind) {
    case Kind::kString: return {string_methods().begin(), string_methods().end()};
    case Kind::kDict: return {kDictMethods.begin(), kDictMethods.end()};
    case Kind::kList: return {kListMethods.begin(), kListMethods.end()};
    default: return {};
  }
}

namespace {

// getattr(obj, name) in the immutable sandbox: a method, a namespace
// attribute, an unsafe-attribute marker, or nullopt when there is none.
std::optional<Value> python_attribute(const Value& obj, const std::string& name) {
  if (!name.empty() && name[0] == '_') return unsafe(obj, name);
  switch (obj.kind()) {
    case Kind::kString:
      if (string_methods().count(name)) return bound_method(obj, name);
      break;
    case Kind::kDict:
      if (kDictMethods.count(name)) return bound_method(obj, name);
      if (kDictMutators.count(name)) return unsafe(obj, name);
      break;
    case Kind::kNamespace:
      if (const Value* v = obj.mapping().find(std::string_view(name))) return *v;
      break;
    case Kind::kList:
    case Kind::kTuple:
      if (kListMethods.count(name) && (obj.is_list() || name != "copy")) return bound_method(obj, name);
      if (obj.is_list() && kListMutators.count(name)) return unsafe(obj, name);
      break;
    default: break;
  }
  return std::nullopt;
}

}  // namespace

Result<Value> get_python_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  std::optional<Value> v = python_attribute(obj, name);
  return v ? *v : missing_attribute(obj, name);
}

Result<Value> get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (std::optional<Value> v = python_attribute(obj, name)) return *v;
  if (obj.is_dict()) {
    if (const Value* item = obj.mapping().find(std::string_view(name))) return *item;
  }
  return missing_attribute(obj, name);
}

Result<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  switch (obj.kind()) {
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kString: {
      if (!key.is_int() && !key.is_bool()) break;
      int64_t i = key.as_int();
      if (obj.is_string()) {
        std::vector<size_t> off = utf8_offsets(obj.as_string());
        int64_t n = static_cast<int64_t>(off.size()) - 1;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return missing_item(obj, key);
        return Value(obj.as_text().substr(off[static_cast<size_t>(i)], off[static_cast<size_t>(i) + 1] - off[static_cast<size_t>(i)]));
      }
      int64_t n = static_cast<int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return missing_item(obj, key);
      return obj.items()[static_cast<size_t>(i)];
    }
    case Kind::kDict:
      if (const Value* v = obj.mapping().find(key)) return *v;
      break;
    default: break;
  }
  // jinja2 falls back to the attribute of that name: a method, or an unsafe one.
  if (key.is_string()) return get_attribute(obj, key.as_string());
  return missing_item(obj, key);
}

Result<Value> get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  // jinja2 compiles a slice to Python's own subscript (not the environment's
  // getitem): what cannot be sliced is an error, not an undefined value.
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_dict()) return invalid_argument("unhashable type: 'slice'");
  if (!obj.is_string() && !obj.is_sequence_like()) {
    return invalid_argument(std::string("'") + kind_type_name(obj.kind()) + "' object is not subscriptable");
  }
  auto as_index = [](const Value* v) -> Result<std::optional<int64_t>> {
    if (!v || v->is_none()) return std::optional<int64_t>();
    if (!v->is_int() && !v->is_bool()) return invalid_argument("slice indices must be integers or None");
    return std::optional<int64_t>(v->as_int());
  };
  LADDER_ASSIGN_OR_RETURN(auto b, as_index(start));
  LADDER_ASSIGN_OR_RETURN(auto e, as_index(stop));
  LADDER_ASSIGN_OR_RETURN(auto st, as_index(step));
  int64_t s = st.value_or(1);
  if (s == 0) return invalid_argument("slice step cannot be zero");
  std::vector<size_t> off;
  int64_t n;
  if (obj.is_string()) {
    off = utf8_offsets(obj.as_string());
    n = static_cast<int64_t>(off.size()) - 1;
  } else {
    n = static_cast<int64_t>(obj.items().size());
  }
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) x += n;
    if (s > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t lo = clamp(b, s > 0 ? 0 : n - 1);
  int64_t hi = clamp(e, s > 0 ? n : -1);
  std::vector<int64_t> idx;
  for (int64_t i = lo; s > 0 ? i < hi : i > hi;) {
    idx.push_back(i);
    if (__builtin_add_overflow(i, s, &i)) break;
  }
  if (obj.is_string()) {
    if (s == 1) return Value(obj.as_text().substr(off[static_cast<size_t>(lo)], off[static_cast<size_t>(std::max(lo, hi))] - off[static_cast<size_t>(lo)]));
    TextBuilder out;
    for (int64_t i : idx) out.append(obj.as_text(), off[static_cast<size_t>(i)], off[static_cast<size_t>(i) + 1] - off[static_cast<size_t>(i)]);
    return Value(out.take());
  }
  List out;
  for (int64_t i : idx) out.push_back(obj.items()[static_cast<size_t>(i)]);
  return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace ladder::jinja
