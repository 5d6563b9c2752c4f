// Randomly generated tool lists (fixed seed) through the Kimi-K2.5 declaration encoder and the
// K2.5 chat template, checked for invariants rather than exact text: the same input always gives
// the same output; a list with an unsupported construct where the encoder always parses it
// fails, and the template then shows the tools as JSON; every other list declares every
// function inside the fixed frame, with no trailing whitespace; and where the key sort cannot
// matter (no $defs, no self reference, no object defaults) sorting changes nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "tokenizer/chat_template.h"
#include "tokenizer/tool_declarations_prompt.h"
#include "tokenizer/tool_declarations_ts.h"
#include "util/log.h"

namespace myriad::testing {
namespace {

using J = nlohmann::ordered_json;

class Generator {
  public:
    explicit Generator(uint32_t seed) : rng_(seed) {}

    struct Case {
        J tools;
        int functions = 0;         // entries that declare a function
        bool unsupported = false;  // holds a construct the encoder must reject
        bool sort_neutral = true;  // the key sort cannot change the output
    };

    Case tools() {
        Case c;
        case_ = &c;
        c.tools = J::array();
        int n = pick(1, 3);
        for (int i = 0; i < n; ++i) {
            if (chance(10)) {
                c.tools.push_back({{"type", "retrieval"}});
                continue;
            }
            defs_.clear();
            J params = root();
            J f = {{"name", "fn_" + std::to_string(c.functions)}};
            if (chance(50)) f["description"] = description();
            if (!params.is_null()) f["parameters"] = std::move(params);
            c.tools.push_back({{"type", "function"}, {"function", std::move(f)}});
            ++c.functions;
        }
        return c;
    }

  private:
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool chance(int percent) { return pick(1, 100) <= percent; }

    std::string description() {
        static const char* const kTexts[] = {
            "Plain words.",          "Two\nlines",
            "Gap\n\nbelow",          "Trailing newline\n",
            "Températures °C, 東京", "say \"hi\" {braces} // slashes"};
        return kTexts[pick(0, 5)];
    }

    J root() {
        if (chance(5)) return nullptr;  // no parameters
        J s = {{"type", "object"}};
        if (chance(25)) {
            J defs = J::object();
            int n = pick(1, 2);
            for (int i = 0; i < n; ++i) defs_.push_back("Def" + std::to_string(i));
            for (const std::string& name : defs_) {
                defs[name] = schema(1);
                // A definition must be a mapping: true/false there fail the list (§2.9).
                if (!defs[name].is_object()) case_->unsupported = true;
            }
            s["$defs"] = std::move(defs);
            case_->sort_neutral = false;
        }
        object_fields(s, 0);
        if (chance(20)) s["additionalProperties"] = chance(50);
        return s;
    }

    void object_fields(J& s, int depth) {
        J props = J::object();
        J required = J::array();
        int n = pick(0, 4);
        static const char* const kNames[] = {"city",   "Tags", "_x", "a",    "with space",
                                             "my-key", "é",    "9n", "zeta", "limit"};
        for (int i = 0; i < n; ++i) {
            std::string name = kNames[pick(0, 9)];
            if (props.contains(name)) continue;  // (a replaced schema could hide a bad one)
            props[name] = schema(depth + 1);
            if (chance(50)) required.push_back(name);
        }
        s["properties"] = std::move(props);
        if (!required.empty() || chance(20)) s["required"] = std::move(required);
    }

    // An unsupported construct: the encoder parses every property schema, so it must fail.
    J unsupported() {
        case_->unsupported = true;
        switch (pick(0, 8)) {
            case 0:
                return {{"oneOf", J::array({{{"type", "string"}}, {{"type", "integer"}}})}};
            case 1:
                return {{"const", "x"}};
            case 2:
                return {{"description", "no type"}};
            case 3:
                return {{"$ref", "#/definitions/X"}};
            case 4:
                return {{"$ref", "#/$defs/Missing"}};
            case 5:
                return {{"type", J::array({"string", "uuid"})}};
            case 6:
                return {{"type", "object"}, {"additionalProperties", "yes"}};
            case 7:
                return {{"type", "array"}, {"items", J::array({{{"type", "string"}}})}};
            default:
                return {{"type", "string"}, {"enum", J::array({"x", 1})}};
        }
    }

    J schema(int depth) {
        if (chance(3)) return unsupported();
        int kind = depth > 3 ? pick(0, 4) : pick(0, 11);
        J s;
        switch (kind) {
            case 0:
                s = {{"type", "string"}};
                if (chance(30)) s["maxLength"] = pick(1, 100);
                if (chance(20)) s["pattern"] = "^[a-z]+$";
                if (chance(20)) s["format"] = "date";
                if (chance(20)) s["default"] = "d\u00e9f";
                break;
            case 1:
                s = {{"type", chance(50) ? "integer" : "number"}};
                if (chance(30)) s["minimum"] = chance(50) ? J(pick(-5, 5)) : J(0.25 * pick(1, 8));
                if (chance(30)) s["default"] = chance(50) ? J(10) : J(1e-5);
                break;
            case 2:
                s = chance(50) ? J{{"type", "boolean"}, {"default", chance(50)}}
                               : J{{"type", "null"}};
                break;
            case 3:
                if (chance(50)) {
                    s = {{"enum", J::array({"red", "green", nullptr})}};
                    if (chance(50)) s["type"] = J::array({"string", "null"});
                } else {
                    s = {{"enum", J::array({"red", 2, true, 0.5})}};
                    if (chance(30)) s["type"] = "uuid";  // values are not checked for it
                }
                break;
            case 4:
                s = chance(50) ? J(chance(50)) : J::object();  // true, false, {}
                break;
            case 5:
                s = {{"anyOf", J::array()}};
                for (int i = pick(1, 3); i > 0; --i) s["anyOf"].push_back(schema(depth + 1));
                break;
            case 6:
                s = {{"type", J::array({"string", "integer", "null", "object", "array"})}};
                s["type"].erase(static_cast<size_t>(pick(0, 4)));
                break;
            case 7:
            case 8:
                s = {{"type", "array"}, {"items", schema(depth + 1)}};
                if (chance(30) && s["items"].is_object() && !s["items"].empty())
                    s["items"]["description"] = "an item";
                if (chance(30)) s["minItems"] = 1;
                break;
            case 9:
                s = {{"type", "object"}};
                object_fields(s, depth);
                if (chance(30))
                    s["additionalProperties"] = chance(50) ? J(true) : schema(depth + 1);
                if (chance(15)) {
                    s["default"] = {{"k", "v"}, {"a", 1}};
                    case_->sort_neutral = false;
                }
                break;
            case 10:
                if (defs_.empty()) return schema(depth);
                s = {{"$ref", "#/$defs/" + defs_[pick(0, static_cast<int>(defs_.size()) - 1)]}};
                break;
            default:
                s = {{"$ref", "#"}};
                case_->sort_neutral = false;
                break;
        }
        // (Not on {}: a description alone is no schema.)
        if (s.is_object() && !s.empty() && chance(30)) s["description"] = description();
        return s;
    }

    std::mt19937 rng_;
    Case* case_ = nullptr;
    std::vector<std::string> defs_;
};

std::string outcome(const J& tools) {
    try {
        return encode_tools_typescript(tools);
    } catch (const ToolDeclarationError& e) {
        return std::string("error: ") + e.what();
    }
}

ChatTemplate kimi_k25_template() {
    std::ifstream in(std::string(MYRIAD_SOURCE_DIR) + "/tests/data/chat_templates/kimi-k2.5.jinja");
    std::stringstream ss;
    ss << in.rdbuf();
    return ChatTemplate::from_source(ss.str(), "kimi-k2.5.jinja", J::object());
}

TEST(ToolDeclarationsRandom, InvariantsOnGeneratedSchemas) {
    Generator gen(20240611);
    const ChatTemplate k25 = kimi_k25_template();
    // The fallback's warning line, hundreds of times, would bury the test's own output.
    const log::Level level = log::level();
    log::set_level(log::Level::Off);
    int declared = 0, rejected = 0;
    for (int i = 0; i < 3000; ++i) {
        Generator::Case c = gen.tools();
        const std::string text = c.tools.dump();
        const std::string out = outcome(c.tools);
        ASSERT_EQ(out, outcome(c.tools)) << "not deterministic: " << text;
        const bool failed = out.starts_with("error: ");
        ASSERT_EQ(failed, c.unsupported) << text << "\n" << out;
        if (failed) {
            ++rejected;
        } else if (c.functions == 0) {
            EXPECT_EQ(out, "") << text;
        } else {
            ++declared;
            ASSERT_TRUE(out.starts_with("# Tools\n\n## functions\nnamespace functions {\n")) << out;
            ASSERT_TRUE(out.ends_with("}) => any;\n}\n") ||
                        out.ends_with("parameters) => any;\n}\n"))
                << out;
            for (int f = 0; f < c.functions; ++f)
                EXPECT_NE(out.find("\ntype fn_" + std::to_string(f) + " = (_: "), std::string::npos)
                    << out;
            std::istringstream lines(out);
            for (std::string line; std::getline(lines, line);)
                ASSERT_FALSE(line.ends_with(" ")) << "trailing space in " << text << "\n" << out;
        }
        if (c.sort_neutral) {
            // (Failures may name another construct first once the keys are sorted.)
            const std::string sorted = outcome(sort_keys_deep(c.tools));
            if (failed) {
                EXPECT_TRUE(sorted.starts_with("error: ")) << text;
            } else {
                EXPECT_EQ(sorted, out) << text;
            }
        }

        // Through the template: the declarations, or the JSON fallback of the sorted tools.
        if (i % 10 == 0) {
            J request = {{"messages", J::array({{{"role", "user"}, {"content", "hi"}}})},
                         {"tools", c.tools}};
            const std::string prompt = k25.render(request);
            const std::string head = "<|im_system|>tool_declare<|im_middle|>";
            if (c.functions > 0 && !failed) {
                EXPECT_TRUE(prompt.starts_with(head + "# Tools\n")) << prompt;
            } else {
                EXPECT_TRUE(prompt.starts_with(head + "[{\"")) << prompt;
            }
        }
    }
    log::set_level(level);
    std::printf("%d lists declared, %d rejected\n", declared, rejected);
    // The generator must exercise both outcomes.
    EXPECT_GT(declared, 1000);
    EXPECT_GT(rejected, 200);
}

}  // namespace
}  // namespace myriad::testing
