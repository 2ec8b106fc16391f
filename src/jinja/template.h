// Template: a Jinja template parsed once and rendered many times, with the
// semantics of python3-jinja2 as Hugging Face transformers configures it for
// chat templates: an immutable sandbox, trim_blocks, lstrip_blocks, the
// loopcontrols extension, `tojson` as json.dumps(ensure_ascii=False, ...),
// and the globals raise_exception(message) and strftime_now(format).
//
// A render returns marked Text (text.h): the bytes, and which of them came
// from context strings given as data.
#pragma once

#include <cstddef>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "jinja/text.h"
#include "jinja/value.h"

namespace ladder::jinja {

struct TemplateAst;

struct RenderOptions {
  // The time strftime_now() formats (local time); unset means the clock.
  std::optional<std::time_t> now;
  // Bounds that keep a hostile template from exhausting the stack or memory.
  int max_call_depth = 256;
  size_t max_output_bytes = size_t{64} << 20;
};

class Template {
 public:
  // A syntax error or a construct outside the supported subset is
  // kInvalidArgument / kUnimplemented naming it and its line.
  static Result<Template> parse(std::string source);

  // Renders with `context` (name -> value; build values with
  // Value::from_json(json, Origin::kData) for what the caller does not
  // trust). raise_exception(), an undefined value used where jinja2 fails, a
  // type error or a bound is a Status naming the template line; running out
  // of memory is kResourceExhausted, never an exception.
  Result<Text> render(const Dict& context, const RenderOptions& options = {}) const;

  const std::string& source() const { return source_; }

 private:
  Template(std::string source, std::shared_ptr<const TemplateAst> ast)
      : source_(std::move(source)), ast_(std::move(ast)) {}

  std::string source_;
  std::shared_ptr<const TemplateAst> ast_;
};

}  // namespace ladder::jinja
