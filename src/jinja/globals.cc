#include "jinja/globals.h"

#include "jinja/operations.h"

namespace ladder::jinja {
namespace {

// jinja2's sandbox refuses ranges longer than this.
constexpr int64_t kMaxRange = 100000;

Result<Value> global_range(const CallArgs& args) {
  if (!args.keyword.empty()) return invalid_argument("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) return invalid_argument("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  for (const Value& v : p) {
    if (!v.is_int() && !v.is_bool()) {
      return invalid_argument(std::string("'") + kind_type_name(v.kind()) + "' object cannot be interpreted as an integer");
    }
  }
  int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) return invalid_argument("range() arg 3 must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange) {
      return out_of_range("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

// dict(*args, **kwargs) as Python builds it: at most one mapping or iterable of pairs.
Result<Dict> build_dict(const CallArgs& args) {
  if (args.positional.size() > 1) {
    return invalid_argument("dict expected at most 1 argument, got " + std::to_string(args.positional.size()));
  }
  Dict d;
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict() || src.is_namespace()) {
      d = src.mapping();
    } else {
      LADDER_ASSIGN_OR_RETURN(List items, iterate(src));
      for (size_t i = 0; i < items.size(); ++i) {
        Result<List> pair = iterate(items[i]);
        if (!pair.is_ok() || pair->size() != 2) {
          return invalid_argument("dictionary update sequence element #" + std::to_string(i) +
                                  " is not a sequence of length 2");
        }
        d.set((*pair)[0], (*pair)[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value(k), v);
  return d;
}

}  // namespace

Dict make_globals(std::optional<std::time_t> now) {
  Dict g;
  g.set(Value("range"), Value::callable("range", global_range));
  g.set(Value("dict"), Value::callable("dict", [](const CallArgs& args) -> Result<Value> {
          LADDER_ASSIGN_OR_RETURN(Dict d, build_dict(args));
          return Value::dict(std::move(d));
        }));
  g.set(Value("namespace"), Value::callable("namespace", [](const CallArgs& args) -> Result<Value> {
          LADDER_ASSIGN_OR_RETURN(Dict d, build_dict(args));
          return Value::namespace_object(std::move(d));
        }));
  g.set(Value("raise_exception"), Value::callable("raise_exception", [](const CallArgs& args) -> Result<Value> {
          const Value* msg = args.get(0, "message");
          return invalid_argument("raise_exception: " + (msg ? msg->str() : std::string()));
        }));
  g.set(Value("strftime_now"), Value::callable("strftime_now", [now](const CallArgs& args) -> Result<Value> {
          const Value* fmt = args.get(0, "format");
          if (!fmt || !fmt->is_string()) return invalid_argument("strftime_now(format) expects a format string");
          std::time_t t = now ? *now : std::time(nullptr);
          std::tm tm{};
          localtime_r(&t, &tm);
          char buf[512];
          size_t n = std::strftime(buf, sizeof(buf), fmt->as_string().c_str(), &tm);
          if (n == 0 && !fmt->as_string().empty()) return invalid_argument("strftime_now: format produced no output or is too long");
          return Value(std::string(buf, n));
        }));
  return g;
}

}  // namespace ladder::jinja
