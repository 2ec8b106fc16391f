// JSON Schema -> GBNF, for response_format json_object / json_schema and for
// tool arguments. The grammar admits only text that parses as JSON and
// validates against the schema (with the bounded whitespace and numbers of
// json_rules.h); where a schema allows more than the grammar can express
// exactly, the grammar takes a subset that still validates:
//
//   - objects hold the properties listed in `properties`, in their order (so
//     the schema should be parsed with nlohmann::ordered_json), required ones
//     always, optional ones or not; other keys are never generated, whatever
//     additionalProperties says, unless there are no `properties` (then
//     additionalProperties true/absent means any object, a schema means keys
//     with values of that schema, false means {});
//   - oneOf is generated as anyOf (a value matching two branches would not
//     validate; keep branches disjoint);
//   - enum and const values are written compactly as nlohmann writes them.
//
// Supported keywords: type (one or a list), enum, const, anyOf, oneOf, allOf
// (one element), $ref (local: #, #/$defs/..., #/definitions/..., any local
// JSON pointer; recursion allowed), nullable, properties, required,
// additionalProperties, items, minItems, maxItems, minLength, maxLength,
// pattern (regex_to_gbnf.h), format (date, time, date-time, uuid, email,
// ipv4), minimum / maximum / exclusiveMinimum / exclusiveMaximum on
// integers, uniqueItems false; annotations (title, description, default,
// examples, $schema, $id, $comment, deprecated, readOnly, writeOnly, $defs,
// definitions) are ignored. Any other keyword is an error naming it and where
// it is (kUnimplemented); a malformed schema is kInvalidArgument.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "grammar/gbnf_builder.h"

namespace ladder::grammar {

// response_format {"type": "json_object"}: any JSON object.
std::string json_object_gbnf();

// response_format {"type": "json_schema", "json_schema": {"schema": S}}: the grammar for S.
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// The same from a schema parsed into nlohmann::json, whose objects keep keys
// in alphabetical order: properties are generated in that order.
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);

// Adds the rules of `schema` to `builder` (rule names begin with `prefix`)
// and returns an expression matching the schema's values, for grammars that
// embed JSON values (tool-call arguments).
Result<std::string> add_json_schema(const nlohmann::ordered_json& schema, std::string_view prefix,
                                    GbnfBuilder* builder);

}  // namespace ladder::grammar
