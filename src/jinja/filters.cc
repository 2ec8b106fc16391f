// jinja2's built-in filters over text and numbers, with the Hugging Face
// `tojson` (ensure_ascii=False, indent, separators, sort_keys); the
// sequence filters are in sequence_filters.cc, the tests in builtin_tests.cc.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <map>
#include <set>

#include "jinja/builtins.h"
#include "jinja/filter_support.h"
#include "jinja/operations.h"
#include "jinja/string_util.h"
#include "jinja/text_ops.h"

namespace ladder::jinja {
namespace {

// Filters that stringify first (jinja2's soft_str): Undefined becomes "".
Text soft_text(const Value& v) { return v.to_text(); }

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
  LADDER_ASSIGN_OR_RETURN(Text s, json_dumps(v, o));
  return Value(std::move(s));
}

Result<Value> f_trim(const Value& v, const CallArgs& args) {
  const Value* chars = args.get(0, "chars");
  std::string c = chars && chars->is_string() ? chars->as_string() : "";
  return Value(text_strip(soft_text(v), true, true, chars && chars->is_string() ? &c : nullptr));
}

Result<Value> f_length(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(int64_t n, length_of(v));
  return Value(n);
}

Result<Value> f_default(const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default_value");
  bool boolean = arg_bool(args, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback ? *fallback : Value("");
  return v;
}

Result<Value> f_upper(const Value& v, const CallArgs&) { return Value(text_upper(soft_text(v))); }
Result<Value> f_lower(const Value& v, const CallArgs&) { return Value(text_lower(soft_text(v))); }
Result<Value> f_capitalize(const Value& v, const CallArgs&) { return Value(text_capitalize(soft_text(v))); }
Result<Value> f_title(const Value& v, const CallArgs&) { return Value(jinja_title_text(soft_text(v))); }
Result<Value> f_string(const Value& v, const CallArgs&) { return Value(soft_text(v)); }
Result<Value> f_safe(const Value& v, const CallArgs&) { return v.is_undefined() ? Value("") : v; }

Result<Value> f_replace(const Value& v, const CallArgs& args) {
  const Value* old_v = args.get(0, "old");
  const Value* new_v = args.get(1, "new");
  if (!old_v || !new_v) return invalid_argument("replace filter expects (old, new[, count])");
  const Value* count = args.get(2, "count");
  int64_t n = count && !count->is_none() ? count->as_int() : -1;
  LADDER_ASSIGN_OR_RETURN(Text out, text_replace(soft_text(v), old_v->to_text(), new_v->to_text(), n));
  return Value(std::move(out));
}

// A double that fits an int64 (Python would make a big int; we refuse).
Result<Value> double_to_int(double d) {
  if (std::isinf(d)) return out_of_range("cannot convert float infinity to integer");
  if (!(std::fabs(d) < 9.2e18)) return out_of_range("int: " + python_float_repr(d) + " does not fit a 64-bit integer");
  return Value(static_cast<int64_t>(d));
}

// The text of a Python int() / float() literal: surrounding whitespace
// stripped, underscores between digits removed; nullopt when Python would
// refuse it (float() takes no hex, int() no fraction or exponent).
std::optional<std::string> numeric_literal(std::string_view text, bool integer) {
  std::string_view s = py_strip(text, true, true, nullptr);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      bool between_digits = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                            std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!between_digits) return std::nullopt;
      continue;
    }
    bool ok = std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' ||
              (!integer && std::string_view(".eEinfatyINFATY").find(c) != std::string_view::npos);
    if (!ok) return std::nullopt;
    out += c;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<double> parse_python_float(std::string_view text) {
  std::optional<std::string> lit = numeric_literal(text, false);
  if (!lit) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(lit->c_str(), &end);
  if (end != lit->c_str() + lit->size()) return std::nullopt;
  return d;
}

// int(value) falling back to int(float(value)), then to the default, as
// jinja2's `int` filter does; infinity and integers beyond 64 bits are errors.
Result<Value> f_int(const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  Value def = fallback ? *fallback : Value(int64_t{0});
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isnan(v.as_double()) ? Result<Value>(def) : double_to_int(v.as_double());
  if (v.is_string()) {
    if (std::optional<std::string> lit = numeric_literal(v.as_string(), true)) {
      errno = 0;
      char* end = nullptr;
      long long i = std::strtoll(lit->c_str(), &end, 10);
      if (end == lit->c_str() + lit->size()) {
        if (errno == ERANGE) return out_of_range("int: " + *lit + " does not fit a 64-bit integer");
        return Value(static_cast<int64_t>(i));
      }
    }
    std::optional<double> d = parse_python_float(v.as_string());
    if (d && !std::isnan(*d)) return double_to_int(*d);
  }
  return def;
}

Result<Value> f_float(const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  Value def = fallback ? *fallback : Value(0.0);
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    if (std::optional<double> d = parse_python_float(v.as_string())) return Value(*d);
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
  // math.ceil / math.floor return ints: no negative zero.
  if (m == "ceil") {
    r = std::ceil(x) + 0.0;
  } else if (m == "floor") {
    r = std::floor(x) + 0.0;
  } else {
    return invalid_argument("method must be common, ceil or floor");
  }
  return Value(r / scale);
}

// jinja2's indent appends to its input: it takes strings only.
Result<Value> f_indent(const Value& v, const CallArgs& args) {
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_string()) return invalid_argument("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  const Value* width = args.get(0, "width");
  if (width && !width->is_string()) LADDER_RETURN_IF_ERROR(check_width("indent", width->as_int()));
  Text pad = width ? (width->is_string() ? width->as_text() : Text(std::string(static_cast<size_t>(std::max<int64_t>(0, width->as_int())), ' ')))
                   : Text(std::string(4, ' '));
  bool first = arg_bool(args, 1, "first", false);
  bool blank = arg_bool(args, 2, "blank", false);
  TextBuilder with_newline;
  with_newline.append(soft_text(v));
  with_newline.append("\n");
  std::vector<Text> lines = text_splitlines(with_newline.take());
  TextBuilder out;
  if (first) out.append(pad);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out.append("\n");
    if (i && (blank || !lines[i].empty())) out.append(pad);
    out.append(lines[i]);
  }
  return Value(out.take());
}

Result<Value> f_escape(const Value& v, const CallArgs&) {
  return Value(map_pieces(soft_text(v), [](std::string_view piece) {
    std::string out;
    for (char c : piece) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return out;
  }));
}

Result<Value> f_format(const Value& v, const CallArgs& args) {
  if (!args.keyword.empty()) return unimplemented("format filter with keyword arguments is not supported");
  Value tuple = Value::tuple(args.positional);
  return binary_op("%", Value(soft_text(v)), tuple);
}

Result<Value> f_wordcount(const Value& v, const CallArgs&) {
  return Value(static_cast<int64_t>(py_count_words(v.str())));
}

// Python's str.center: the odd padding character goes left when the width is odd.
Result<Value> f_center(const Value& v, const CallArgs& args) {
  const Value* width = args.get(0, "width");
  int64_t w = width ? width->as_int() : 80;
  LADDER_RETURN_IF_ERROR(check_width("center", w));
  Text text = soft_text(v);
  int64_t len = static_cast<int64_t>(utf8_length(text.bytes()));
  if (w <= len) return Value(text);
  int64_t marg = w - len;
  int64_t left = marg / 2 + (marg & w & 1);
  TextBuilder out;
  out.append(std::string(static_cast<size_t>(left), ' '));
  out.append(text);
  out.append(std::string(static_cast<size_t>(marg - left), ' '));
  return Value(out.take());
}

// jinja2's truncate measures and slices its input as it is: a short
// sequence comes back unchanged, a long one cannot be cut with a string end.
Result<Value> f_truncate(const Value& v, const CallArgs& args) {
  Text text = soft_text(v);
  const Value* length_v = args.get(0, "length");
  int64_t length = length_v ? length_v->as_int() : 255;
  bool killwords = arg_bool(args, 1, "killwords", false);
  const Value* end_v = args.get(2, "end");
  Text end = end_v ? end_v->to_text() : Text("...");
  const Value* leeway_v = args.get(3, "leeway");
  int64_t leeway = leeway_v && !leeway_v->is_none() ? leeway_v->as_int() : 5;
  if (length < static_cast<int64_t>(end.size())) return invalid_argument("expected length >= " + std::to_string(end.size()) + ", got " + std::to_string(length));
  if (leeway < 0) return invalid_argument("expected leeway >= 0, got " + std::to_string(leeway));
  if (!v.is_string()) {
    LADDER_ASSIGN_OR_RETURN(int64_t len, length_of(v));
    if (len <= length + leeway) return v;
    return invalid_argument("truncate: cannot cut a " + type_name(v) + " with a string end");
  }
  std::vector<size_t> off = utf8_offsets(text.bytes());
  int64_t n = static_cast<int64_t>(off.size()) - 1;
  if (n <= length + leeway) return Value(text);
  size_t head = off[static_cast<size_t>(length - static_cast<int64_t>(utf8_length(end.bytes())))];
  if (!killwords) {
    size_t space = text.bytes().rfind(' ', head == 0 ? 0 : head - 1);
    if (space != std::string::npos && space < head) head = space;
  }
  TextBuilder out;
  out.append(text, 0, head);
  out.append(end);
  return Value(out.take());
}

Result<Value> f_attr(const Value& v, const CallArgs& args) {
  const Value* name = args.get(0, "name");
  if (!name || !name->is_string()) return invalid_argument("attr: expected an attribute name");
  return get_python_attribute(v, name->as_string());
}

const FilterTable& filters() {
  static const FilterTable k = [] {
    FilterTable t = {
        {"tojson", f_tojson},   {"trim", f_trim},         {"length", f_length},         {"count", f_length},
        {"default", f_default}, {"d", f_default},         {"upper", f_upper},           {"lower", f_lower},
        {"capitalize", f_capitalize}, {"title", f_title}, {"string", f_string},         {"safe", f_safe},
        {"replace", f_replace}, {"int", f_int},           {"float", f_float},           {"abs", f_abs},
        {"round", f_round},     {"indent", f_indent},     {"escape", f_escape},         {"e", f_escape},
        {"forceescape", f_escape}, {"format", f_format},  {"wordcount", f_wordcount},   {"attr", f_attr},
        {"center", f_center},   {"truncate", f_truncate},
    };
    add_sequence_filters(t);
    return t;
  }();
  return k;
}

}  // namespace

bool is_known_filter(std::string_view name) { return filters().count(name) > 0; }

std::vector<std::string> filter_names() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : filters()) out.push_back(name);
  return out;
}

Result<Value> apply_filter(std::string_view name, const Value& input, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) return invalid_argument("no filter named '" + std::string(name) + "'");
  return it->second(input, args);
}

}  // namespace ladder::jinja
