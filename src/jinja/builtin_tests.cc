// jinja2's built-in tests (`x is defined`, `x is divisibleby 3`, ...).
#include <map>

#include "jinja/builtins.h"
#include "jinja/filter_support.h"
#include "jinja/operations.h"
#include "jinja/string_util.h"

namespace ladder::jinja {
namespace {

using TestFn = Result<bool> (*)(const Value&, const CallArgs&);

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
// jinja2's Undefined is callable (calling it fails).
Result<bool> t_callable(const Value& v, const CallArgs&) { return v.is_callable() || v.is_undefined(); }
Result<bool> t_iterable(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_sequence_like() || v.is_iterator() || v.is_dict_view() || v.is_dict() ||
         v.is_undefined();
}
Result<bool> t_sequence(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_sequence_like() || v.is_dict() || v.is_undefined();
}
Result<bool> t_lower(const Value& v, const CallArgs&) { return py_str_is(v.str(), "islower"); }
Result<bool> t_upper(const Value& v, const CallArgs&) { return py_str_is(v.str(), "isupper"); }

// `value % n == r` with Python's `%`, so floats work, and strings format.
Result<bool> remainder_is(const Value& v, const Value& n, int64_t r) {
  LADDER_ASSIGN_OR_RETURN(Value rem, binary_op("%", v, n));
  return rem.equals(Value(r));
}
Result<bool> t_even(const Value& v, const CallArgs&) { return remainder_is(v, Value(int64_t{2}), 0); }
Result<bool> t_odd(const Value& v, const CallArgs&) { return remainder_is(v, Value(int64_t{2}), 1); }
Result<bool> t_divisibleby(const Value& v, const CallArgs& args) {
  const Value* n = args.get(0, "num");
  if (!n) return invalid_argument("divisibleby: missing argument");
  return remainder_is(v, *n, 0);
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

// `value in environment.filters`: a dict look-up, so the value must hash.
Result<bool> named_in(const Value& v, bool (*known)(std::string_view)) {
  if (!is_hashable(v)) return invalid_argument("unhashable type: '" + type_name(v) + "'");
  return v.is_string() && known(v.as_string());
}
Result<bool> t_filter(const Value& v, const CallArgs&) { return named_in(v, is_known_filter); }
Result<bool> t_test(const Value& v, const CallArgs&) { return named_in(v, is_known_test); }
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

bool is_known_test(std::string_view name) { return tests().count(name) > 0; }

std::vector<std::string> test_names() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : tests()) out.push_back(name);
  return out;
}

Result<bool> apply_test(std::string_view name, const Value& input, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) return invalid_argument("no test named '" + std::string(name) + "'");
  return it->second(input, args);
}

}  // namespace ladder::jinja
