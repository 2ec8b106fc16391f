// jinja2's built-in filters and tests (the ones chat templates use), with the
// Hugging Face `tojson` (ensure_ascii=False, indent, separators, sort_keys).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "tokenizer/chat/builtins.h"
#include "tokenizer/chat/operations.h"
#include "tokenizer/chat/string_util.h"

namespace ladder::chat {
namespace {

using FilterFn = Result<Value> (*)(const Value&, const CallArgs&);
using TestFn = Result<bool> (*)(const Value&, const CallArgs&);

std::string type_name(const Value& v) { return kind_type_name(v.kind()); }

bool arg_bool(const CallArgs& args, size_t index, const char* name, bool fallback) {
  const Value* v = args.get(index, name);
  return v ? v->truthy() : fallback;
}

// Filters that stringify first (jinja2's soft_str): Undefined becomes "".
std::string soft_str(const Value& v) { return v.str(); }

// Dotted attribute path ("a.b", "0") as jinja2's make_attrgetter walks it.
Result<Value> attr_path(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return get_item(item, attribute);
  Value cur = item;
  std::string path = attribute.as_string();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value key = (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos)
                    ? Value(static_cast<int64_t>(std::stoll(part)))
                    : Value(part);
    if (cur.is_undefined()) return cur;
    LADDER_ASSIGN_OR_RETURN(cur, get_item(cur, key));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

// Sort key for sort/dictsort/unique/min/max: strings folded unless case_sensitive.
Value fold(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.as_string()));
  return v;
}

Status sort_values(List& items, bool reverse, const std::function<Result<Value>(const Value&)>& key) {
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items) {
    LADDER_ASSIGN_OR_RETURN(Value k, key(v));
    keyed.emplace_back(std::move(k), v);
  }
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (!error.is_ok()) return false;
    Result<bool> lt = reverse ? less_than(b.first, a.first) : less_than(a.first, b.first);
    if (!lt.is_ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  LADDER_RETURN_IF_ERROR(error);
  for (size_t i = 0; i < items.size(); ++i) items[i] = keyed[i].second;
  return Status::ok();
}

// ---- filters ---------------------------------------------------------------

// Widths a filter pads or indents with; far beyond any real template's need.
constexpr int64_t kMaxPadWidth = 1 << 16;

Status check_width(const char* filter, int64_t width) {
  if (width > kMaxPadWidth) {
    return out_of_range(std::string(filter) + ": width " + std::to_string(width) + " exceeds " + std::to_string(kMaxPadWidth));
  }
  return Status::ok();
}

Result<Value> f_tojson(const Value& v, const CallArgs& args) {
  JsonDumpOptions o;
  if (const Value* indent = args.get(1, "indent"); indent && !indent->is_none()) {
    o.has_indent = true;
    if (indent->is_string()) {
      o.indent = indent->as_string();
    } else if (indent->is_int()) {
      LADDER_RETURN_IF_ERROR(check_width("tojson", indent->as_int()));
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent->as_int())), ' ');
    } else {
      return invalid_argument("tojson: indent must be an int or a string");
    }
    o.item_separator = ",";
  }
  if (const Value* sep = args.get(2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_sequence_like() || sep->items().size() != 2 || !sep->items()[0].is_string() ||
        !sep->items()[1].is_string()) {
      return invalid_argument("tojson: separators must be a pair of strings");
    }
    o.item_separator = sep->items()[0].as_string();
    o.key_separator = sep->items()[1].as_string();
  }
  if (const Value* ea = args.get(0, "ensure_ascii")) o.ensure_ascii = ea->truthy();
  o.sort_keys = arg_bool(args, 3, "sort_keys", false);
  LADDER_ASSIGN_OR_RETURN(std::string s, json_dumps(v, o));
  return Value(s);
}

Result<Value> f_trim(const Value& v, const CallArgs& args) {
  const Value* chars = args.get(0, "chars");
  std::string c = chars && chars->is_string() ? chars->as_string() : "";
  return Value(py_strip(soft_str(v), true, true, chars && chars->is_string() ? &c : nullptr));
}

Result<Value> f_length(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(int64_t n, length_of(v));
  return Value(n);
}

Result<Value> f_items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::iterator({});
  if (!v.is_dict()) return invalid_argument("items: can only get item pairs from a mapping, not " + type_name(v));
  List out;
  for (const auto& [k, val] : v.mapping().entries) out.push_back(Value::tuple({k, val}));
  return Value::iterator(std::move(out));
}

Result<Value> f_dictsort(const Value& v, const CallArgs& args) {
  if (!v.is_dict()) return invalid_argument("dictsort: expected a mapping, got " + type_name(v));
  bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
  const Value* by = args.get(1, "by");
  int pos = 0;
  if (by && by->is_string()) {
    if (by->as_string() == "value") pos = 1;
    else if (by->as_string() != "key") return invalid_argument("You can only sort by either \"key\" or \"value\"");
  }
  bool reverse = arg_bool(args, 2, "reverse", false);
  List items;
  for (const auto& [k, val] : v.mapping().entries) items.push_back(Value::tuple({k, val}));
  LADDER_RETURN_IF_ERROR(sort_values(items, reverse, [&](const Value& t) -> Result<Value> {
    return fold(t.items()[static_cast<size_t>(pos)], case_sensitive);
  }));
  return Value::list(std::move(items));
}

Result<Value> f_default(const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default_value");
  bool boolean = arg_bool(args, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback ? *fallback : Value("");
  return v;
}

Result<Value> f_join(const Value& v, const CallArgs& args) {
  const Value* sep = args.get(0, "d");
  const Value* attribute = args.get(1, "attribute");
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (out.size() > kMaxBuiltStringBytes) {
      return out_of_range("join: result would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
    }
    if (i) out += sep ? sep->str() : "";
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(Value a, attr_path(items[i], *attribute));
      out += a.str();
    } else {
      out += items[i].str();
    }
  }
  return Value(out);
}

Result<Value> f_first(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  if (items.empty()) return Value::undefined("first", "No first item, sequence was empty.");
  return items.front();
}

Result<Value> f_last(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  if (items.empty()) return Value::undefined("last", "No last item, sequence was empty.");
  return items.back();
}

Result<Value> f_upper(const Value& v, const CallArgs&) { return Value(py_upper(soft_str(v))); }
Result<Value> f_lower(const Value& v, const CallArgs&) { return Value(py_lower(soft_str(v))); }
Result<Value> f_capitalize(const Value& v, const CallArgs&) { return Value(py_capitalize(soft_str(v))); }
Result<Value> f_title(const Value& v, const CallArgs&) { return Value(jinja_title(soft_str(v))); }
Result<Value> f_string(const Value& v, const CallArgs&) { return Value(soft_str(v)); }
Result<Value> f_safe(const Value& v, const CallArgs&) { return v.is_undefined() ? Value("") : v; }

Result<Value> f_replace(const Value& v, const CallArgs& args) {
  const Value* old_v = args.get(0, "old");
  const Value* new_v = args.get(1, "new");
  if (!old_v || !new_v) return invalid_argument("replace filter expects (old, new[, count])");
  const Value* count = args.get(2, "count");
  int64_t n = count && !count->is_none() ? count->as_int() : -1;
  std::string text = soft_str(v);
  if (py_replace_size(text, old_v->str(), new_v->str(), n) > kMaxBuiltStringBytes) {
    return out_of_range("replace: result would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
  }
  return Value(py_replace(text, old_v->str(), new_v->str(), n));
}

Result<Value> f_list(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  return Value::list(std::move(items));
}

// A double that fits an int64 (Python would make a big int; we refuse).
Result<Value> double_to_int(double d) {
  if (!(std::fabs(d) < 9.2e18)) return out_of_range("int: " + python_float_repr(d) + " does not fit a 64-bit integer");
  return Value(static_cast<int64_t>(d));
}

Result<Value> f_int(const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  Value def = fallback ? *fallback : Value(int64_t{0});
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? double_to_int(v.as_double()) : Result<Value>(def);
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), true, true, nullptr);
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(static_cast<int64_t>(i));
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d)) return double_to_int(d);
  }
  return def;
}

Result<Value> f_float(const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  Value def = fallback ? *fallback : Value(0.0);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), true, true, nullptr);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
  }
  return def;
}

Result<Value> f_abs(const Value& v, const CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) return out_of_range("integer overflow in abs");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return invalid_argument("bad operand type for abs(): '" + type_name(v) + "'");
}

Result<Value> f_round(const Value& v, const CallArgs& args) {
  if (!v.is_number()) return invalid_argument("round: expected a number, got " + type_name(v));
  const Value* prec = args.get(0, "precision");
  int64_t p = prec ? prec->as_int() : 0;
  const Value* method = args.get(1, "method");
  std::string m = method ? method->str() : "common";
  if (m == "common") {
    // Python's round(x, n): correctly rounded from the exact binary value,
    // ties to even -- which is what printf's %.*f does.
    if (!v.is_float()) return Value(v.as_int());  // round(int, n >= 0) is the int itself
    if (p >= 0 && std::isfinite(v.as_double())) {
      char buf[700];  // up to 309 integer digits + 300 decimals
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::min<int64_t>(p, 300)), v.as_double());
      return Value(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(-p));
    return Value(std::nearbyint(v.as_double() / scale) * scale);
  }
  double scale = std::pow(10.0, static_cast<double>(p));
  double x = v.as_double() * scale;
  double r;
  if (m == "ceil") {
    r = std::ceil(x);
  } else if (m == "floor") {
    r = std::floor(x);
  } else {
    return invalid_argument("method must be common, ceil or floor");
  }
  return Value(r / scale);
}

Result<Value> f_map(const Value& v, const CallArgs& args) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  List out;
  if (args.positional.empty()) {
    const Value* attribute = args.get(99, "attribute");
    if (!attribute) return invalid_argument("map: expected a filter name or attribute=");
    const Value* def = args.get(99, "default");
    for (const Value& item : items) {
      LADDER_ASSIGN_OR_RETURN(Value a, attr_path(item, *attribute));
      out.push_back(a.is_undefined() && def ? *def : a);
    }
    return Value::iterator(std::move(out));
  }
  std::string filter = args.positional[0].str();
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    LADDER_ASSIGN_OR_RETURN(Value r, apply_filter(filter, item, rest));
    out.push_back(std::move(r));
  }
  return Value::iterator(std::move(out));
}

// select / reject / selectattr / rejectattr share one walk.
Result<Value> select_common(const Value& v, const CallArgs& args, bool by_attr, bool keep_when) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  size_t at = 0;
  const Value* attribute = nullptr;
  if (by_attr) {
    if (args.positional.empty()) return invalid_argument("selectattr/rejectattr: missing attribute name");
    attribute = &args.positional[at++];
  }
  std::string test;
  if (at < args.positional.size()) test = args.positional[at++].str();
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(at), args.positional.end());
  rest.keyword = args.keyword;
  List out;
  for (const Value& item : items) {
    Value subject = item;
    if (attribute) {
      LADDER_ASSIGN_OR_RETURN(subject, attr_path(item, *attribute));
    }
    bool pass;
    if (test.empty()) {
      pass = subject.truthy();
    } else {
      LADDER_ASSIGN_OR_RETURN(pass, apply_test(test, subject, rest));
    }
    if (pass == keep_when) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_select(const Value& v, const CallArgs& a) { return select_common(v, a, false, true); }
Result<Value> f_reject(const Value& v, const CallArgs& a) { return select_common(v, a, false, false); }
Result<Value> f_selectattr(const Value& v, const CallArgs& a) { return select_common(v, a, true, true); }
Result<Value> f_rejectattr(const Value& v, const CallArgs& a) { return select_common(v, a, true, false); }

Result<Value> f_unique(const Value& v, const CallArgs& args) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
  const Value* attribute = args.get(1, "attribute");
  List out, seen;
  for (const Value& item : items) {
    Value key = item;
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(key, attr_path(item, *attribute));
    }
    key = fold(key, case_sensitive);
    bool dup = false;
    for (const Value& s : seen) dup = dup || s.equals(key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_sort(const Value& v, const CallArgs& args) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  bool reverse = arg_bool(args, 0, "reverse", false);
  bool case_sensitive = arg_bool(args, 1, "case_sensitive", false);
  const Value* attribute = args.get(2, "attribute");
  LADDER_RETURN_IF_ERROR(sort_values(items, reverse, [&](const Value& item) -> Result<Value> {
    Value k = item;
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(k, attr_path(item, *attribute));
    }
    return fold(k, case_sensitive);
  }));
  return Value::list(std::move(items));
}

Result<Value> min_max(const Value& v, const CallArgs& args, bool want_max) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  if (items.empty()) return Value::undefined("", std::string("No aggregated item, sequence was empty."));
  bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
  const Value* attribute = args.get(1, "attribute");
  Value best = items[0];
  Value best_key;
  for (size_t i = 0; i < items.size(); ++i) {
    Value k = items[i];
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(k, attr_path(items[i], *attribute));
    }
    k = fold(k, case_sensitive);
    if (i == 0) {
      best_key = k;
      continue;
    }
    LADDER_ASSIGN_OR_RETURN(bool better, want_max ? less_than(best_key, k) : less_than(k, best_key));
    if (better) {
      best = items[i];
      best_key = k;
    }
  }
  return best;
}

Result<Value> f_min(const Value& v, const CallArgs& a) { return min_max(v, a, false); }
Result<Value> f_max(const Value& v, const CallArgs& a) { return min_max(v, a, true); }

Result<Value> f_sum(const Value& v, const CallArgs& args) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  const Value* attribute = args.get(0, "attribute");
  const Value* start = args.get(1, "start");
  Value total = start ? *start : Value(int64_t{0});
  for (const Value& item : items) {
    Value x = item;
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(x, attr_path(item, *attribute));
    }
    LADDER_ASSIGN_OR_RETURN(total, binary_op("+", total, x));
  }
  return total;
}

Result<Value> f_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) {
    LADDER_ASSIGN_OR_RETURN(List chars, iterate(v));
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
    return Value(out);
  }
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::iterator(std::move(items));
}

Result<Value> f_indent(const Value& v, const CallArgs& args) {
  const Value* width = args.get(0, "width");
  if (width && !width->is_string()) LADDER_RETURN_IF_ERROR(check_width("indent", width->as_int()));
  std::string pad = width ? (width->is_string() ? width->as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, width->as_int())), ' '))
                          : std::string(4, ' ');
  bool first = arg_bool(args, 1, "first", false);
  bool blank = arg_bool(args, 2, "blank", false);
  std::vector<std::string> lines = py_splitlines(soft_str(v) + "\n");
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + pad : "") + lines[i];
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) out += "\n" + (lines[i].empty() ? "" : pad + lines[i]);
  }
  return Value(first ? pad + out : out);
}

Result<Value> f_escape(const Value& v, const CallArgs&) {
  std::string out;
  for (char c : soft_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(out);
}

Result<Value> f_format(const Value& v, const CallArgs& args) {
  if (!args.keyword.empty()) return unimplemented("format filter with keyword arguments is not supported");
  Value tuple = Value::tuple(args.positional);
  return binary_op("%", Value(soft_str(v)), tuple);
}

Result<Value> f_batch(const Value& v, const CallArgs& args) {
  const Value* size = args.get(0, "linecount");
  if (!size || !size->is_int() || size->as_int() <= 0) return invalid_argument("batch: linecount must be a positive int");
  const Value* fill = args.get(1, "fill_with");
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  List out, cur;
  for (const Value& item : items) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == size->as_int()) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none()) {
      while (static_cast<int64_t>(cur.size()) < size->as_int()) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_wordcount(const Value& v, const CallArgs&) {
  return Value(static_cast<int64_t>(py_split(soft_str(v), nullptr, -1).size()));
}

// Python's str.center: the odd padding character goes left when the width is odd.
Result<Value> f_center(const Value& v, const CallArgs& args) {
  const Value* width = args.get(0, "width");
  int64_t w = width ? width->as_int() : 80;
  LADDER_RETURN_IF_ERROR(check_width("center", w));
  std::string text = soft_str(v);
  int64_t len = static_cast<int64_t>(utf8_length(text));
  if (w <= len) return Value(text);
  int64_t marg = w - len;
  int64_t left = marg / 2 + (marg & w & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + text + std::string(static_cast<size_t>(marg - left), ' '));
}

Result<Value> f_truncate(const Value& v, const CallArgs& args) {
  std::string text = soft_str(v);
  const Value* length_v = args.get(0, "length");
  int64_t length = length_v ? length_v->as_int() : 255;
  bool killwords = arg_bool(args, 1, "killwords", false);
  const Value* end_v = args.get(2, "end");
  std::string end = end_v ? end_v->str() : "...";
  const Value* leeway_v = args.get(3, "leeway");
  int64_t leeway = leeway_v && !leeway_v->is_none() ? leeway_v->as_int() : 5;
  if (length < static_cast<int64_t>(end.size())) return invalid_argument("expected length >= " + std::to_string(end.size()) + ", got " + std::to_string(length));
  if (leeway < 0) return invalid_argument("expected leeway >= 0, got " + std::to_string(leeway));
  std::vector<size_t> off = utf8_offsets(text);
  int64_t n = static_cast<int64_t>(off.size()) - 1;
  if (n <= length + leeway) return Value(text);
  std::string head = text.substr(0, off[static_cast<size_t>(length - static_cast<int64_t>(utf8_length(end)))]);
  if (killwords) return Value(head + end);
  size_t space = head.rfind(' ');
  if (space != std::string::npos) head.resize(space);
  return Value(head + end);
}

Result<Value> f_attr(const Value& v, const CallArgs& args) {
  const Value* name = args.get(0, "name");
  if (!name || !name->is_string()) return invalid_argument("attr: expected an attribute name");
  return get_attribute(v, name->as_string());
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> k = {
      {"tojson", f_tojson},       {"trim", f_trim},         {"length", f_length},     {"count", f_length},
      {"items", f_items},         {"dictsort", f_dictsort}, {"default", f_default},   {"d", f_default},
      {"join", f_join},           {"first", f_first},       {"last", f_last},         {"upper", f_upper},
      {"lower", f_lower},         {"capitalize", f_capitalize}, {"title", f_title}, {"string", f_string},
      {"safe", f_safe},           {"replace", f_replace},   {"list", f_list},         {"int", f_int},
      {"float", f_float},         {"abs", f_abs},           {"round", f_round},       {"map", f_map},
      {"select", f_select},       {"reject", f_reject},     {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"unique", f_unique},   {"sort", f_sort},         {"min", f_min},
      {"max", f_max},             {"sum", f_sum},           {"reverse", f_reverse},   {"indent", f_indent},
      {"escape", f_escape},       {"e", f_escape},          {"forceescape", f_escape}, {"format", f_format},
      {"batch", f_batch},         {"wordcount", f_wordcount}, {"attr", f_attr},     {"center", f_center},
      {"truncate", f_truncate},
  };
  return k;
}

// ---- tests -----------------------------------------------------------------

Result<bool> t_defined(const Value& v, const CallArgs&) { return !v.is_undefined(); }
Result<bool> t_undefined(const Value& v, const CallArgs&) { return v.is_undefined(); }
Result<bool> t_none(const Value& v, const CallArgs&) { return v.is_none(); }
Result<bool> t_string(const Value& v, const CallArgs&) { return v.is_string(); }
Result<bool> t_number(const Value& v, const CallArgs&) { return v.is_number(); }
Result<bool> t_integer(const Value& v, const CallArgs&) { return v.is_int(); }
Result<bool> t_float(const Value& v, const CallArgs&) { return v.is_float(); }
Result<bool> t_boolean(const Value& v, const CallArgs&) { return v.is_bool(); }
Result<bool> t_true(const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
Result<bool> t_false(const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
Result<bool> t_mapping(const Value& v, const CallArgs&) { return v.is_dict(); }
Result<bool> t_callable(const Value& v, const CallArgs&) { return v.is_callable(); }
Result<bool> t_iterable(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_sequence_like() || v.is_iterator() || v.is_dict() || v.is_undefined();
}
Result<bool> t_sequence(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_sequence_like() || v.is_dict() || v.is_undefined();
}
Result<bool> t_lower(const Value& v, const CallArgs&) {
  std::string s = soft_str(v);
  return s == py_lower(s) && s != py_upper(s);
}
Result<bool> t_upper(const Value& v, const CallArgs&) {
  std::string s = soft_str(v);
  return s == py_upper(s) && s != py_lower(s);
}

Result<int64_t> int_operand(const Value& v, const char* test) {
  if (!v.is_int() && !v.is_bool()) return invalid_argument(std::string("test '") + test + "' expects an integer, got " + type_name(v));
  return v.as_int();
}
Result<bool> t_even(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(int64_t i, int_operand(v, "even"));
  return i % 2 == 0;
}
Result<bool> t_odd(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(int64_t i, int_operand(v, "odd"));
  return i % 2 != 0;
}
Result<bool> t_divisibleby(const Value& v, const CallArgs& args) {
  const Value* n = args.get(0, "num");
  if (!n) return invalid_argument("divisibleby: missing argument");
  LADDER_ASSIGN_OR_RETURN(int64_t a, int_operand(v, "divisibleby"));
  LADDER_ASSIGN_OR_RETURN(int64_t b, int_operand(*n, "divisibleby"));
  if (b == 0) return invalid_argument("integer division or modulo by zero");
  return a % b == 0;
}

template <const char* Op>
Result<bool> t_compare(const Value& v, const CallArgs& args) {
  const Value* other = args.get(0, "other");
  if (!other) return invalid_argument(std::string("test '") + Op + "' expects an argument");
  return compare_op(Op, v, *other);
}
constexpr char kEq[] = "==", kNe[] = "!=", kLt[] = "<", kLe[] = "<=", kGt[] = ">", kGe[] = ">=", kIn[] = "in";

Result<bool> t_sameas(const Value& v, const CallArgs& args) {
  const Value* other = args.get(0, "other");
  if (!other) return invalid_argument("sameas expects an argument");
  return v.same_object(*other);
}
Result<bool> t_filter(const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.as_string()); }
Result<bool> t_test(const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.as_string()); }
Result<bool> t_escaped(const Value&, const CallArgs&) { return false; }

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> k = {
      {"defined", t_defined},   {"undefined", t_undefined}, {"none", t_none},       {"string", t_string},
      {"number", t_number},     {"integer", t_integer},     {"float", t_float},     {"boolean", t_boolean},
      {"true", t_true},         {"false", t_false},         {"mapping", t_mapping}, {"callable", t_callable},
      {"iterable", t_iterable}, {"sequence", t_sequence},   {"lower", t_lower},     {"upper", t_upper},
      {"even", t_even},         {"odd", t_odd},             {"divisibleby", t_divisibleby},
      {"eq", t_compare<kEq>},   {"equalto", t_compare<kEq>}, {"==", t_compare<kEq>}, {"ne", t_compare<kNe>},
      {"!=", t_compare<kNe>},   {"lt", t_compare<kLt>},     {"lessthan", t_compare<kLt>}, {"<", t_compare<kLt>},
      {"le", t_compare<kLe>},   {"<=", t_compare<kLe>},     {"gt", t_compare<kGt>}, {"greaterthan", t_compare<kGt>},
      {">", t_compare<kGt>},    {"ge", t_compare<kGe>},     {">=", t_compare<kGe>}, {"in", t_compare<kIn>},
      {"sameas", t_sameas},     {"filter", t_filter},       {"test", t_test},       {"escaped", t_escaped},
  };
  return k;
}

}  // namespace

bool is_known_filter(std::string_view name) { return filters().count(name) > 0; }
bool is_known_test(std::string_view name) { return tests().count(name) > 0; }

Result<Value> apply_filter(std::string_view name, const Value& input, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) return invalid_argument("no filter named '" + std::string(name) + "'");
  return it->second(input, args);
}

Result<bool> apply_test(std::string_view name, const Value& input, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) return invalid_argument("no test named '" + std::string(name) + "'");
  return it->second(input, args);
}

}  // namespace ladder::chat
