// section := [SECTION_BEGIN] call(first) [call(first + 1) [... up to kMaxConstrainedCalls]]
//            SECTION_END
// call(i) := one of the callable tools: PREFIX(name, i) ARGUMENTS(parameters) SUFFIX
#include "api/tool_call_grammar.h"

#include <algorithm>
#include <optional>

#include "grammar/grammar_cache.h"
#include "grammar/json_schema.h"
#include "grammar/vocabulary.h"
#include "util/error.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;
using grammar::Element;
using grammar::GrammarBuilder;

bool listed(const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
}

bool listed_id(const std::vector<TokenId>& ids, TokenId id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

std::vector<Element> literal(GrammarBuilder& b, const Tokenizer& tok,
                             const std::vector<TokenId>& markers, std::string_view text) {
    return b.literal(grammar_text(tok, markers, text));
}

}  // namespace

std::string grammar_text(const Tokenizer& tok, const std::vector<TokenId>& markers,
                         std::string_view text) {
    std::string out;
    for (TokenId id : tok.encode(text, false))
        out += tok.is_special(id) || listed_id(markers, id)
                   ? grammar::Vocabulary::special_token_bytes(id)
                   : tok.token_bytes(id);
    return out;
}

std::shared_ptr<const grammar::Grammar> tool_call_grammar(const ToolCallSyntax& syntax,
                                                          const Tokenizer& tok,
                                                          const std::vector<TokenId>& markers,
                                                          const ToolCallGrammarSpec& spec) {
    // The key: everything the grammar depends on, the tools' schemas in their canonical text.
    J key = {{"syntax", std::string(syntax.section_begin) + syntax.call_prefix("N", 7) +
                            std::string(syntax.call_suffix)},
             {"tools", spec.tools},
             {"names", spec.names},
             {"strict", spec.strict},
             {"all_strict", spec.all_strict},
             {"first", spec.first_index},
             {"parallel", spec.parallel},
             {"begin", spec.with_section_begin}};
    std::string key_text;
    try {
        key_text = "tools:" + key.dump();
    } catch (const std::exception&) {
        bad_input("the tools hold a string that is not valid UTF-8");
    }
    return grammar::GrammarCache::shared().get(key_text, [&] {
        GrammarBuilder b;
        struct Tool {
            std::string name;
            Element args;
        };
        std::vector<Tool> tools;
        for (const J& t : spec.tools) {
            const std::string name = t["function"]["name"].get<std::string>();
            if (!spec.names.empty() && !listed(spec.names, name)) continue;
            const bool strict = spec.all_strict || listed(spec.strict, name);
            J schema = J{{"type", "object"}};
            if (strict && t["function"].contains("parameters") &&
                t["function"]["parameters"].is_object())
                schema = t["function"]["parameters"];
            try {
                // Compiled alone first (cached): its own checks, such as recursion that
                // consumes nothing, then name this tool.
                grammar::compile_json_schema(schema);
                tools.push_back({name, grammar::add_json_schema(b, schema)});
            } catch (const Error& e) {
                if (e.kind() != ErrorKind::BadInput) throw;
                bad_input("tool '{}': its parameters cannot be enforced: {}", name, e.what());
            }
        }
        MYRIAD_CHECK(!tools.empty(), "a tool-call grammar over no tools");
        const int calls = spec.parallel ? kMaxConstrainedCalls : 1;
        // From the last call back: rest(k) = call(k) rest(k + 1)?, the last one alone.
        std::optional<Element> rest;
        for (int k = calls - 1; k >= 0; --k) {
            std::vector<std::vector<Element>> alts;
            for (const Tool& t : tools) {
                std::vector<Element> seq =
                    literal(b, tok, markers, syntax.call_prefix(t.name, spec.first_index + k));
                seq.push_back(t.args);
                for (const Element& e : literal(b, tok, markers, syntax.call_suffix))
                    seq.push_back(e);
                alts.push_back(std::move(seq));
            }
            Element call = b.choice(std::move(alts));
            rest = rest ? b.group({call, b.optional(*rest)}) : call;
        }
        std::vector<Element> root;
        if (spec.with_section_begin) root = literal(b, tok, markers, syntax.section_begin);
        root.push_back(*rest);
        for (const Element& e : literal(b, tok, markers, syntax.section_end)) root.push_back(e);
        const grammar::RuleId r = b.new_rule();
        b.add_alt(r, std::move(root));
        return std::make_shared<const grammar::Grammar>(std::move(b), r, "the tool-call section");
    });
}

}  // namespace myriad::api
