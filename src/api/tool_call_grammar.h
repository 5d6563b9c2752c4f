// The grammar of a tool-call section in the model's own syntax (tool_call_syntax.h): the
// section markers and each call's header as literal text (a marker that is one special token is
// that token, never text that spells it), the arguments as the JSON-schema grammar of the called
// tool's parameters, so a constrained call always parses and its arguments always validate.
// Compiled grammars are cached across requests (grammar/grammar_cache.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tool_call_syntax.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace myriad::api {

struct ToolCallGrammarSpec {
    // OpenAI-shaped tools [{type, function: {name, parameters}}]; only `names` of them are
    // callable (all when empty).
    nlohmann::ordered_json tools;
    std::vector<std::string> names;
    // Tools whose arguments are held to their schema; the others' to any JSON object.
    // Empty: all of them (tool_choice required and named).
    std::vector<std::string> strict;
    bool all_strict = true;
    int first_index = 0;             // the conversation's calls so far (kimi_k2 numbers its ids)
    bool parallel = true;            // several calls in the section (at most kMaxCalls), else one
    bool with_section_begin = true;  // false: the grammar starts after the section's opening
};

constexpr int kMaxConstrainedCalls = 8;

// A BadInput error naming the tool and the schema keyword for a schema the grammar cannot hold.
// `markers`: the tokens spelled as special (grammar/vocabulary.h), as in the vocabulary.
std::shared_ptr<const grammar::Grammar> tool_call_grammar(const ToolCallSyntax& syntax,
                                                          const Tokenizer& tokenizer,
                                                          const std::vector<TokenId>& markers,
                                                          const ToolCallGrammarSpec& spec);

// `text` as the grammar sees the model's output: special tokens and markers as Vocabulary's
// spelling of them, the rest as its bytes.
std::string grammar_text(const Tokenizer& tokenizer, const std::vector<TokenId>& markers,
                         std::string_view text);

}  // namespace myriad::api
