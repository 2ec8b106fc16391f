#include "grammar/gbnf_builder.h"

#include <cstdio>

#include "common/check.h"
#include "common/utf8.h"

namespace ladder::grammar {
namespace {

std::string sanitize(std::string_view hint) {
  std::string out;
  for (char c : hint) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    char w = ok ? c : '-';
    if (w == '-' && (out.empty() || out.back() == '-')) continue;
    out.push_back(w);
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) out = "r";
  if (out == "root") out = "root-value";
  return out;
}

void append_escaped(uint32_t cp, bool in_class, std::string* out) {
  char buf[16];
  switch (cp) {
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\\': *out += "\\\\"; return;
    default: break;
  }
  if (!in_class && cp == '"') {
    *out += "\\\"";
    return;
  }
  if (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^')) {
    *out += '\\';
    *out += static_cast<char>(cp);
    return;
  }
  if (cp >= 0x20 && cp < 0x7F) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x100) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
    *out += buf;
  } else if (cp < 0x10000) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
    *out += buf;
  } else {
    std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
    *out += buf;
  }
}

}  // namespace

std::string GbnfBuilder::reserve(std::string_view hint) {
  std::string base = sanitize(hint);
  std::string name = base;
  for (int i = 2; rules_.count(name) != 0; ++i) name = base + "-" + std::to_string(i);
  rules_.emplace(name, std::string());
  return name;
}

void GbnfBuilder::define(const std::string& name, std::string body) {
  auto it = rules_.find(name);
  LADDER_CHECK(it != rules_.end() && it->second.empty(), "GbnfBuilder::define: rule not reserved: " + name);
  it->second = body.empty() ? "\"\"" : std::move(body);
}

std::string GbnfBuilder::add_rule(std::string_view hint, std::string body) {
  std::string name = reserve(hint);
  define(name, std::move(body));
  return name;
}

std::string GbnfBuilder::shared_rule(const std::string& name, std::string_view body) {
  auto it = rules_.find(name);
  if (it == rules_.end()) rules_.emplace(name, std::string(body));
  return name;
}

std::string GbnfBuilder::text(std::string_view root_body) const {
  std::string out = "root ::= " + std::string(root_body) + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

std::string GbnfBuilder::literal(std::string_view bytes) {
  std::string out = "\"";
  size_t pos = 0;
  while (pos < bytes.size()) {
    Utf8Step step = utf8_step(bytes, pos);
    LADDER_CHECK(step.kind == Utf8Kind::kChar, "GbnfBuilder::literal: text is not UTF-8");
    append_escaped(step.codepoint, false, &out);
    pos += step.length;
  }
  return out + "\"";
}

std::string GbnfBuilder::alternation(const std::vector<std::string>& alternatives) {
  LADDER_CHECK(!alternatives.empty(), "GbnfBuilder::alternation: no alternatives");
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "( ";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
  return out + " )";
}

std::string GbnfBuilder::char_class(const std::vector<CodepointRange>& ranges) {
  if (ranges.empty()) return "";
  std::string out = "[";
  for (const CodepointRange& r : ranges) {
    append_escaped(r.lo, true, &out);
    if (r.hi != r.lo) {
      if (r.hi > r.lo + 1) out += '-';
      append_escaped(r.hi, true, &out);
    }
  }
  return out + "]";
}

}  // namespace ladder::grammar
