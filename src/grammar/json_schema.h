// JSON Schema -> Grammar. compile_json_schema() returns a shared, cached Grammar (by the
// schema's canonical text and the options); any_json_grammar() is response_format json_object.
// A keyword or form the grammar cannot enforce exactly is a BadInput error naming the keyword
// and its location, never a looser grammar.
#pragma once

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace myriad::grammar {

struct SchemaOptions {
    // JSON Schema's default: properties not listed are allowed (with any value) unless
    // additionalProperties says otherwise. false: unlisted properties are never generated.
    bool additional_properties_default = true;
};

// Output is compact (no whitespace), object properties in the schema's order.
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                                   const SchemaOptions& options = {});
// Parses `schema_text` first (a BadInput error when it is not JSON).
std::shared_ptr<const Grammar> compile_json_schema_text(std::string_view schema_text,
                                                        const SchemaOptions& options = {});
// The schema's values as one element of `builder` (a grammar holding JSON among other text,
// such as a tool call's arguments between its markers); the same errors.
Element add_json_schema(GrammarBuilder& builder, const nlohmann::ordered_json& schema,
                        const SchemaOptions& options = {});
// Any JSON value (object_only: any JSON object, response_format json_object).
std::shared_ptr<const Grammar> any_json_grammar(bool object_only);

}  // namespace myriad::grammar
