#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/json_rules.h"
#include "grammar/regex_to_gbnf.h"

namespace ladder::grammar {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string, std::less<>>& annotation_keywords() {
  static const std::set<std::string, std::less<>> k = {"title",
                                                       "description",
                                                       "$schema",
                                                       "$id",
                                                       "$comment",
                                                       "default",
                                                       "examples",
                                                       "deprecated",
                                                       "readOnly",
                                                       "writeOnly",
                                                       "$defs",
                                                       "definitions",
                                                       "contentMediaType",
                                                       "contentEncoding"};
  return k;
}

const std::set<std::string, std::less<>>& constraint_keywords() {
  static const std::set<std::string, std::less<>> k = {"type",
                                                       "enum",
                                                       "const",
                                                       "anyOf",
                                                       "oneOf",
                                                       "allOf",
                                                       "$ref",
                                                       "nullable",
                                                       "properties",
                                                       "required",
                                                       "additionalProperties",
                                                       "items",
                                                       "minItems",
                                                       "maxItems",
                                                       "minLength",
                                                       "maxLength",
                                                       "pattern",
                                                       "format",
                                                       "minimum",
                                                       "maximum",
                                                       "exclusiveMinimum",
                                                       "exclusiveMaximum",
                                                       "uniqueItems"};
  return k;
}

std::string where(const std::string& path) {
  return path.empty() ? "the schema root" : path;
}

bool matches_type(const Json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return false;
}

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, std::string prefix, GbnfBuilder* b)
      : root_(root), prefix_(std::move(prefix)), b_(b) {}

  Result<std::string> convert() { return visit(root_, "", prefix_.empty() ? "value" : prefix_); }

 private:
  Status unsupported(const std::string& what, const std::string& path) const {
    return Status(StatusCode::kUnimplemented,
                  "json_schema: " + what + " at " + where(path) + " is not supported");
  }
  Status invalid(const std::string& what, const std::string& path) const {
    return invalid_argument("json_schema: " + what + " at " + where(path));
  }

  Status check_keywords(const Json& s, const std::string& path) const {
    for (const auto& [key, value] : s.items()) {
      if (annotation_keywords().count(key) || constraint_keywords().count(key)) continue;
      return unsupported("keyword '" + key + "'", path);
    }
    if (s.contains("uniqueItems") && s["uniqueItems"] != false)
      return unsupported("keyword 'uniqueItems'", path);
    return Status::ok();
  }

  // The constraint keywords of s other than `allowed`.
  static std::vector<std::string> other_constraints(const Json& s,
                                                    const std::set<std::string, std::less<>>& allowed) {
    std::vector<std::string> out;
    for (const auto& [key, value] : s.items()) {
      if (constraint_keywords().count(key) && !allowed.count(key)) out.push_back(key);
    }
    return out;
  }

  // Bounds on what one request may ask to compile: the work grows with the
  // nesting (each level's path and rules) and with the subschemas.
  static constexpr int kMaxDepth = 64;
  static constexpr int64_t kMaxSubschemas = 5000;

  Result<std::string> visit(const Json& s, const std::string& path, const std::string& hint) {
    if (depth_ >= kMaxDepth) {
      return invalid_argument("json_schema: nests deeper than " + std::to_string(kMaxDepth) +
                              " levels (at " + where(path).substr(0, 200) + "); flatten it or use $ref");
    }
    if (++subschemas_ > kMaxSubschemas) {
      return invalid_argument("json_schema: more than " + std::to_string(kMaxSubschemas) +
                              " subschemas (at " + where(path).substr(0, 200) + ")");
    }
    ++depth_;
    Result<std::string> r = visit_node(s, path, hint);
    --depth_;
    return r;
  }

  Result<std::string> visit_node(const Json& s, const std::string& path, const std::string& hint) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return json_rules::value(b_);
      return invalid("schema false (no value validates)", path);
    }
    if (!s.is_object()) return invalid("a schema must be an object or a boolean", path);
    LADDER_RETURN_IF_ERROR(check_keywords(s, path));
    const bool nullable = s.contains("nullable") && s["nullable"] == true;
    if (s.contains("nullable") && !s["nullable"].is_boolean())
      return invalid("'nullable' must be a boolean", path);
    auto with_null = [&](std::string expr) {
      return nullable ? "( " + expr + " | " + json_rules::null(b_) + " )" : expr;
    };

    if (s.contains("$ref")) {
      std::vector<std::string> others = other_constraints(s, {"$ref", "nullable"});
      if (!others.empty()) return unsupported("'$ref' together with '" + others[0] + "'", path);
      if (!s["$ref"].is_string()) return invalid("'$ref' must be a string", path);
      LADDER_ASSIGN_OR_RETURN(std::string r, visit_ref(s["$ref"].get<std::string>(), path));
      return with_null(r);
    }
    if (s.contains("allOf")) {
      const Json& all = s["allOf"];
      if (!all.is_array() || all.empty()) return invalid("'allOf' must be a non-empty array", path);
      if (all.size() != 1) return unsupported("'allOf' with more than one schema", path);
      std::vector<std::string> others = other_constraints(s, {"allOf", "nullable"});
      if (!others.empty()) return unsupported("'allOf' together with '" + others[0] + "'", path);
      LADDER_ASSIGN_OR_RETURN(std::string r, visit(all[0], path + "/allOf/0", hint));
      return with_null(r);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const Json& list = s[key];
      if (!list.is_array() || list.empty())
        return invalid(std::string("'") + key + "' must be a non-empty array", path);
      std::vector<std::string> others = other_constraints(s, {key, "nullable"});
      if (!others.empty())
        return unsupported(std::string("'") + key + "' together with '" + others[0] + "'", path);
      std::vector<std::string> alts;
      for (size_t i = 0; i < list.size(); ++i) {
        LADDER_ASSIGN_OR_RETURN(std::string alt, visit(list[i], path + "/" + key + "/" + std::to_string(i),
                                                       hint + "-" + std::to_string(i)));
        alts.push_back(alt);
      }
      return with_null(GbnfBuilder::alternation(alts));
    }

    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const Json& x : t) {
          if (!x.is_string()) return invalid("'type' must be a string or a list of strings", path);
          types.push_back(x.get<std::string>());
        }
      } else {
        return invalid("'type' must be a string or a non-empty list of strings", path);
      }
    }
    if (nullable && !types.empty()) types.push_back("null");

    if (s.contains("const") || s.contains("enum")) {
      std::vector<Json> values;
      if (s.contains("const")) {
        values.push_back(s["const"]);
      } else {
        if (!s["enum"].is_array() || s["enum"].empty())
          return invalid("'enum' must be a non-empty array", path);
        values.assign(s["enum"].begin(), s["enum"].end());
      }
      if (nullable) values.push_back(nullptr);
      std::vector<std::string> alts;
      for (const Json& v : values) {
        bool ok = types.empty();
        for (const std::string& t : types) ok = ok || matches_type(v, t);
        if (ok) alts.push_back(GbnfBuilder::literal(v.dump()));
      }
      if (alts.empty()) return invalid("no value of 'enum'/'const' has the schema's 'type'", path);
      return GbnfBuilder::alternation(alts);
    }

    if (types.empty()) {
      // Keywords of one kind imply its type; none at all means any value.
      auto has_any = [&](std::initializer_list<const char*> keys) {
        for (const char* k : keys) {
          if (s.contains(k)) return true;
        }
        return false;
      };
      if (has_any({"properties", "required", "additionalProperties"})) types.push_back("object");
      if (has_any({"items", "minItems", "maxItems"})) types.push_back("array");
      if (has_any({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
      if (has_any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.push_back("number");
      if (types.empty()) return with_null(json_rules::value(b_));
      if (nullable) types.push_back("null");
    }
    std::vector<std::string> alts;
    for (const std::string& t : types) {
      LADDER_ASSIGN_OR_RETURN(std::string alt, visit_type(s, t, path, hint));
      alts.push_back(alt);
    }
    return GbnfBuilder::alternation(alts);
  }

  Result<std::string> visit_type(const Json& s, const std::string& type, const std::string& path,
                                 const std::string& hint) {
    if (type == "string") return visit_string(s, path);
    if (type == "integer") return visit_integer(s, path);
    if (type == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(k))
          return unsupported(std::string("'") + k + "' on type number (only on integer)", path);
      }
      return json_rules::number(b_);
    }
    if (type == "boolean") return json_rules::boolean(b_);
    if (type == "null") return json_rules::null(b_);
    if (type == "object") return visit_object(s, path, hint);
    if (type == "array") return visit_array(s, path, hint);
    return invalid("unknown type '" + type + "'", path);
  }

  // A non-negative integer keyword (minLength...), or nullopt when absent.
  Result<std::optional<int64_t>> count_keyword(const Json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return std::optional<int64_t>();
    const Json& v = s[key];
    if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) {
      return invalid(std::string("'") + key + "' must be a non-negative integer", path);
    }
    double d = v.get<double>();
    if (d > kMaxRepeatCount) {
      return unsupported(std::string("'") + key + "' above " + std::to_string(kMaxRepeatCount), path);
    }
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }

  static std::string bounds(int64_t min, std::optional<int64_t> max) {
    if (max && *max == min) return "{" + std::to_string(min) + "}";
    return "{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "}";
  }

  Result<std::string> visit_string(const Json& s, const std::string& path) {
    LADDER_ASSIGN_OR_RETURN(std::optional<int64_t> min_len, count_keyword(s, "minLength", path));
    LADDER_ASSIGN_OR_RETURN(std::optional<int64_t> max_len, count_keyword(s, "maxLength", path));
    if (min_len && max_len && *max_len < *min_len) return invalid("'maxLength' is below 'minLength'", path);
    const bool lengths = min_len || max_len;
    std::string content;
    if (s.contains("format")) {
      if (!s["format"].is_string()) return invalid("'format' must be a string", path);
      if (s.contains("pattern")) return unsupported("'format' together with 'pattern'", path);
      if (lengths) return unsupported("'format' together with 'minLength'/'maxLength'", path);
      auto f = json_rules::string_format(s["format"].get<std::string>(), b_);
      if (!f.is_ok())
        return Status(f.status().code(),
                      "json_schema: " + f.status().message() + " (at " + where(path) + ")");
      content = f.value();
    } else if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return invalid("'pattern' must be a string", path);
      if (lengths) return unsupported("'pattern' together with 'minLength'/'maxLength'", path);
      auto r = regex_to_json_content(s["pattern"].get<std::string>(), b_);
      if (!r.is_ok())
        return Status(r.status().code(),
                      "json_schema: " + r.status().message() + " (at " + where(path) + ")");
      content = r.value();
    } else {
      const std::string c = json_rules::character(b_);
      content = lengths ? c + bounds(min_len.value_or(0), max_len) : c + "*";
    }
    return "\"\\\"\" " + content + " \"\\\"\"";
  }

  Result<std::string> visit_integer(const Json& s, const std::string& path) {
    std::optional<int64_t> lo;
    std::optional<int64_t> hi;
    constexpr double kClamp = 1e17;
    auto num = [&](const char* key, double* out) -> Status {
      const Json& v = s[key];
      if (!v.is_number()) return invalid(std::string("'") + key + "' must be a number", path);
      *out = std::clamp(v.get<double>(), -kClamp, kClamp);
      return Status::ok();
    };
    auto raise_lo = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
    auto lower_hi = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
    double x = 0;
    // Draft 4 writes exclusiveMinimum/Maximum as booleans beside minimum/maximum.
    const bool excl_min_flag = s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() &&
                               s["exclusiveMinimum"].get<bool>();
    const bool excl_max_flag = s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() &&
                               s["exclusiveMaximum"].get<bool>();
    if (s.contains("minimum")) {
      LADDER_RETURN_IF_ERROR(num("minimum", &x));
      raise_lo(static_cast<int64_t>(excl_min_flag ? std::floor(x) + 1 : std::ceil(x)));
    }
    if (s.contains("maximum")) {
      LADDER_RETURN_IF_ERROR(num("maximum", &x));
      lower_hi(static_cast<int64_t>(excl_max_flag ? std::ceil(x) - 1 : std::floor(x)));
    }
    if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean()) {
      LADDER_RETURN_IF_ERROR(num("exclusiveMinimum", &x));
      raise_lo(static_cast<int64_t>(std::floor(x) + 1));
    }
    if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean()) {
      LADDER_RETURN_IF_ERROR(num("exclusiveMaximum", &x));
      lower_hi(static_cast<int64_t>(std::ceil(x) - 1));
    }
    if (!lo && !hi) return json_rules::integer(b_);
    auto r = json_rules::integer_range(lo, hi);
    if (!r.is_ok()) return invalid(r.status().message(), path);
    return r.value();
  }

  Result<std::string> visit_array(const Json& s, const std::string& path, const std::string& hint) {
    LADDER_ASSIGN_OR_RETURN(std::optional<int64_t> min_items, count_keyword(s, "minItems", path));
    LADDER_ASSIGN_OR_RETURN(std::optional<int64_t> max_items, count_keyword(s, "maxItems", path));
    if (min_items && max_items && *max_items < *min_items)
      return invalid("'maxItems' is below 'minItems'", path);
    const std::string w = json_rules::ws(b_);
    std::string item;
    if (!s.contains("items") || s["items"] == true) {
      item = json_rules::value(b_);
    } else if (s["items"] == false) {
      max_items = 0;
    } else if (s["items"].is_array()) {
      return unsupported("'items' as a list (tuple validation)", path);
    } else {
      LADDER_ASSIGN_OR_RETURN(item, visit(s["items"], path + "/items", hint + "-item"));
    }
    const int64_t lo = min_items.value_or(0);
    std::string body;
    if (max_items && *max_items == 0) {
      if (lo > 0) return invalid("'minItems' above 0 with no items allowed", path);
      body = "\"[\" " + w + " \"]\"";
    } else {
      const std::string more = "( " + w + " \",\" " + w + " " + item + " )" +
                               bounds(std::max<int64_t>(lo - 1, 0),
                                      max_items ? std::optional<int64_t>(*max_items - 1) : std::nullopt);
      const std::string items = item + " " + more + " " + w;
      body = lo == 0 ? "\"[\" " + w + " ( " + items + " )? \"]\"" : "\"[\" " + w + " " + items + " \"]\"";
    }
    return b_->add_rule(hint, body);
  }

  Result<std::string> visit_object(const Json& s, const std::string& path, const std::string& hint) {
    const std::string w = json_rules::ws(b_);
    const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props && !props->is_object()) return invalid("'properties' must be an object", path);
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return invalid("'required' must be a list of names", path);
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return invalid("'required' must be a list of names", path);
        required.insert(r.get<std::string>());
      }
    }
    const Json additional = s.contains("additionalProperties") ? s["additionalProperties"] : Json(true);
    if (!additional.is_boolean() && !additional.is_object()) {
      return invalid("'additionalProperties' must be a boolean or a schema", path);
    }
    for (const std::string& r : required) {
      if (!props || !props->contains(r)) {
        if (additional == false) return invalid("required property '" + r + "' is not in 'properties'", path);
        return unsupported("a required property ('" + r + "') that is not in 'properties'", path);
      }
    }
    if (!props || props->empty()) {
      if (additional == false) return b_->add_rule(hint, "\"{\" " + w + " \"}\"");
      if (additional == true) return json_rules::object(b_);
      LADDER_ASSIGN_OR_RETURN(std::string v,
                              visit(additional, path + "/additionalProperties", hint + "-value"));
      const std::string kv = json_rules::string(b_) + " " + w + " \":\" " + w + " " + v;
      return b_->add_rule(
          hint, "\"{\" " + w + " ( " + kv + " ( " + w + " \",\" " + w + " " + kv + " )* " + w + " )? \"}\"");
    }
    // One "key": value per listed property, in order.
    std::vector<std::string> kvs;
    std::vector<bool> is_required;
    for (const auto& [name, sub] : props->items()) {
      LADDER_ASSIGN_OR_RETURN(std::string v, visit(sub, path + "/properties/" + name, hint + "-" + name));
      kvs.push_back(GbnfBuilder::literal(Json(name).dump()) + " " + w + " \":\" " + w + " " + v);
      is_required.push_back(required.count(name) != 0);
    }
    const size_t n = kvs.size();
    const bool any_required = !required.empty();
    const bool all_required = required.size() == n;
    if (all_required) {
      std::string body = "\"{\" " + w + " " + kvs[0];
      for (size_t i = 1; i < n; ++i) body += " " + w + " \",\" " + w + " " + kvs[i];
      return b_->add_rule(hint, body + " " + w + " \"}\"");
    }
    // tail_i: members i.. each written after a comma (optional ones or not);
    // first_i: members i.. starting with the first one present (at least one).
    std::vector<std::string> tail(n + 1);
    for (size_t i = n; i-- > 0;) {
      std::string member = "( " + w + " \",\" " + w + " " + kvs[i] + " )";
      tail[i] = (is_required[i] ? member : member + "?") + (tail[i + 1].empty() ? "" : " " + tail[i + 1]);
    }
    size_t first_required = 0;
    while (first_required < n && !is_required[first_required]) ++first_required;
    std::vector<std::string> first(n);
    for (size_t i = std::min(first_required, n - 1) + 1; i-- > 0;) {
      std::string here = kvs[i] + (tail[i + 1].empty() ? "" : " " + tail[i + 1]);
      std::string body = (is_required[i] || i + 1 == n) ? here : "( " + here + " | " + first[i + 1] + " )";
      first[i] = b_->add_rule(hint + "-from-" + std::to_string(i), body);
    }
    if (any_required) return b_->add_rule(hint, "\"{\" " + w + " " + first[0] + " " + w + " \"}\"");
    return b_->add_rule(hint, "\"{\" " + w + " ( " + first[0] + " " + w + " )? \"}\"");
  }

  Result<std::string> visit_ref(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#') {
      return unsupported("'$ref' to '" + ref + "' (only references inside this schema, starting with #)",
                         path);
    }
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;
    const std::string pointer = ref.substr(1);
    const Json* target = nullptr;
    try {
      target = &root_.at(Json::json_pointer(pointer));
    } catch (const nlohmann::json::exception&) {
      return invalid("'$ref' '" + ref + "' points to nothing in the schema", path);
    }
    std::string tail = pointer.substr(pointer.find_last_of('/') + 1);
    const std::string name =
        b_->reserve(prefix_ + (prefix_.empty() ? "" : "-") + (tail.empty() ? "root-ref" : tail));
    ref_rules_.emplace(ref, name);
    LADDER_ASSIGN_OR_RETURN(std::string body, visit(*target, pointer, name + "-body"));
    b_->define(name, body);
    return name;
  }

  const Json& root_;
  std::string prefix_;
  GbnfBuilder* b_;
  int depth_ = 0;
  int64_t subschemas_ = 0;
  std::map<std::string, std::string> ref_rules_;  // $ref -> rule name
};

}  // namespace

std::string json_object_gbnf() {
  GbnfBuilder b;
  return b.text(json_rules::object(&b));
}

Result<std::string> add_json_schema(const nlohmann::ordered_json& schema, std::string_view prefix,
                                    GbnfBuilder* builder) {
  return SchemaConverter(schema, std::string(prefix), builder).convert();
}

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  GbnfBuilder b;
  LADDER_ASSIGN_OR_RETURN(std::string root, add_json_schema(schema, "", &b));
  return b.text(root);
}

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema) {
  return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()));
}

}  // namespace ladder::grammar
