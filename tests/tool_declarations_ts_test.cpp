// Kimi-K2.5's TypeScript-style tool declarations (src/tokenizer/tool_declarations_ts.h) against
// ../shared/docs/kimi-k25-tools.md: every worked example (S1-S13, the model module's public
// golden fixtures; D1-D12, derived by running the module) byte for byte, directly and after the
// tokenizer's key sort, and the error table of §2.8, all extracted from the document into
// tests/data/kimi_k25_tools/examples.json by tools/extract_kimi_ts_examples.py. The corrections
// of §2.9 are checked with small cases whose expected text follows from its rules by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tokenizer/tool_declarations_prompt.h"
#include "tokenizer/tool_declarations_ts.h"

namespace myriad::testing {
namespace {

using J = nlohmann::ordered_json;

J examples() {
    std::ifstream in(std::string(MYRIAD_SOURCE_DIR) + "/tests/data/kimi_k25_tools/examples.json");
    EXPECT_TRUE(in.good()) << "tests/data/kimi_k25_tools/examples.json";
    return J::parse(in);
}

// The declaration of one function whose `parameters` are the JSON text `params`.
std::string encode_params(const std::string& params) {
    return encode_tools_typescript(J::parse(
        R"([{"type": "function", "function": {"name": "f", "parameters": )" + params + "}}]"));
}

std::string frame(const std::string& blocks) {
    return "# Tools\n\n## functions\nnamespace functions {\n" + blocks + "\n}\n";
}

TEST(ToolDeclarationsTs, WorkedExamplesOfTheSpecification) {
    const J data = examples();
    ASSERT_EQ(data["encoder"].size(), 50u);  // 27 examples, 23 sorted variants
    for (const J& e : data["encoder"]) {
        const std::string id = e["id"];
        J tools = J::parse(e["input"].get<std::string>());
        if (e["sorted"].get<bool>()) tools = sort_keys_deep(tools);
        std::string got;
        try {
            got = encode_tools_typescript(tools);
        } catch (const ToolDeclarationError& err) {
            ADD_FAILURE() << id << ": " << err.what();
            continue;
        }
        EXPECT_EQ(got, e["expected"].get<std::string>()) << id << " (" << e["title"] << ")";
    }
}

TEST(ToolDeclarationsTs, ErrorTableAbortsTheDeclaration) {
    const J data = examples();
    ASSERT_EQ(data["errors"].size(), 12u);
    for (const J& e : data["errors"]) {
        const std::string input = e["input"];
        try {
            std::string out = encode_tools_typescript(J::parse(input));
            ADD_FAILURE() << input << ": no error, wrote\n" << out;
        } catch (const ToolDeclarationError& err) {
            // The module's ValueError texts are kept word for word (they reach the warning).
            if (e["message"].is_string()) {
                EXPECT_EQ(err.what(), e["message"].get<std::string>());
            }
        }
    }
}

TEST(ToolDeclarationsTs, NothingToDeclare) {
    EXPECT_EQ(encode_tools_typescript(J(nullptr)), "");
    EXPECT_EQ(encode_tools_typescript(J::array()), "");
    // Only non-function entries, an empty function, or "function": null: nothing is kept.
    EXPECT_EQ(encode_tools_typescript(J::parse(R"([{"type": "retrieval"}, {"type": "function",
        "function": {}}, {"type": "function", "function": null}, {"function": {"name": "x"}}])")),
              "");
}

// §2.9: inputs the module rejects although §2.1-§2.6 might suggest otherwise.
TEST(ToolDeclarationsTs, CorrectionsThatFail) {
    const char* const lists[] = {
        R"(["get_weather"])",                                      // an entry that is a string
        R"([1])",                                                  // a number
        R"([null])",                                               // null
        R"([{"type": "function", "function": "get_weather"}])",    // function as a string
        R"([{"type": "function", "function": ["get_weather"]}])",  // function as a list
        R"([{"type": "function", "function": {"name": "f", "description": 5}}])",
        R"([{"type": "function", "function": {"name": "f", "parameters": ["a"]}}])",
        R"([{"type": "function", "function": {"name": "f", "parameters": "object"}}])",
    };
    for (const char* list : lists)
        EXPECT_THROW(encode_tools_typescript(J::parse(list)), ToolDeclarationError) << list;
    const char* const params[] = {
        R"({"type": "object", "$defs": {"Anything": true}, "properties": {}})",
        R"({"type": "object", "properties": {"a": null}})",
        R"({"type": "object", "properties": {"a": 3}})",
        R"({"type": "object", "properties": {"a": "string"}})",
        R"({"type": "object", "properties": {"a": {"type": "string", "description": ["d"]}}})",
    };
    for (const char* p : params) EXPECT_THROW(encode_params(p), ToolDeclarationError) << p;
}

TEST(ToolDeclarationsTs, EmptyUnionsLeaveATrailingSpace) {
    for (const char* key : {"anyOf", "enum", "type"})
        EXPECT_EQ(encode_params(std::string(R"({"properties": {"a": {")") + key + R"(": []}}})"),
                  frame("type f = (_: {\n  a?: \n}) => any;"))
            << key;
}

TEST(ToolDeclarationsTs, SelfReferenceSkipsTheRootAdditionalProperties) {
    // The root is never rendered, so its invalid additionalProperties raises nothing...
    EXPECT_EQ(encode_params(R"({"type": "object", "properties": {"n": {"$ref": "#"}},
                                "additionalProperties": "yes"})"),
              frame("interface parameters {\n  n?: parameters\n}\ntype f = (_: parameters) => "
                    "any;"));
    // ...while without the self reference it does.
    EXPECT_THROW(encode_params(R"({"type": "object", "properties": {"n": {"type": "string"}},
                                   "additionalProperties": "yes"})"),
                 ToolDeclarationError);
}

TEST(ToolDeclarationsTs, NullNamePrintsAsNone) {
    EXPECT_EQ(encode_tools_typescript(J::parse(R"([{"type": "function", "function": {
                  "name": null, "parameters": {"type": "object"}}}])")),
              frame("type None = (_: {}) => any;"));
}

TEST(ToolDeclarationsTs, NestedDefsAreVisibleToLaterDefinitionsOnly) {
    // B registers Inner when its interface is emitted; A, after it, may refer to Inner.
    const std::string works = R"({"type": "object", "$defs": {
        "B": {"type": "object", "$defs": {"Inner": {"type": "string"}}, "properties": {}},
        "A": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Inner"}}}},
        "properties": {}})";
    EXPECT_EQ(encode_params(works),
              frame("interface B {}\ninterface A {\n  x?: Inner\n}\ntype f = (_: {}) => any;"));
    // In the other order A is parsed first and the reference is not found.
    const std::string fails = R"({"type": "object", "$defs": {
        "A": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Inner"}}},
        "B": {"type": "object", "$defs": {"Inner": {"type": "string"}}, "properties": {}}},
        "properties": {}})";
    EXPECT_THROW(encode_params(fails), ToolDeclarationError);
    // The tokenizer's key sort puts A first: the working list now falls back (§2.9).
    const J sorted = sort_keys_deep(J::parse(
        R"([{"type": "function", "function": {"name": "f", "parameters": )" + works + "}}]"));
    EXPECT_THROW(encode_tools_typescript(sorted), ToolDeclarationError);
}

TEST(ToolDeclarationsTs, NumbersPrintAsPythonPrintsThem) {
    // Integers stay integers, floats print with Python's repr (shortest round trip, exponent
    // below 1e-4 and from 1e16 on), nested values with JSON spellings.
    EXPECT_EQ(encode_params(R"({"properties": {
            "a": {"type": "number", "default": 10},
            "b": {"type": "number", "default": 10.0},
            "c": {"type": "number", "default": 0.00001, "minimum": 1e16, "maximum": 0.5},
            "d": {"type": "integer", "default": 9007199254740993, "minimum": -3},
            "e": {"type": "array", "default": [true, null, 1.0, 1e-7, "\"q\"\n"]},
            "f": {"type": "object", "default": {"z": 1, "a": {"y": false, "b": "é"}}}}})"),
              frame("type f = (_: {\n"
                    "  // Default: 10\n  a?: number,\n"
                    "  // Default: 10.0\n  b?: number,\n"
                    "  // maximum: 0.5, minimum: 1e+16\n  // Default: 1e-05\n  c?: number,\n"
                    "  // minimum: -3\n  // Default: 9007199254740993\n  d?: number,\n"
                    "  // Default: [true, null, 1.0, 1e-07, \"\\\"q\\\"\\n\"]\n  e?: Array<any>,\n"
                    "  // Default: {\"z\": 1, \"a\": {\"y\": false, \"b\": \"é\"}}\n  f?: {}\n"
                    "}) => any;"));
}

TEST(ToolDeclarationsTs, KeySortReordersDictDefaults) {
    const J tools = J::parse(R"([{"type": "function", "function": {"name": "f", "parameters":
        {"properties": {"f": {"type": "object", "default": {"z": 1, "a": 2}}}}}}])");
    EXPECT_NE(encode_tools_typescript(tools).find("// Default: {\"z\": 1, \"a\": 2}"),
              std::string::npos);
    EXPECT_NE(
        encode_tools_typescript(sort_keys_deep(tools)).find("// Default: {\"a\": 2, \"z\": 1}"),
        std::string::npos);
}

TEST(ToolDeclarationsTs, SortKeysDeep) {
    const J v = J::parse(R"({"b": [{"y": 1, "x": [{"d": 0, "c": 0}]}, 3], "a": null, "é": 1,
                             "_": 2, "Z": 3})");
    // Code-point order: "Z" < "_" < "a" < "b" < "é"; lists keep their order.
    EXPECT_EQ(sort_keys_deep(v).dump(),
              R"({"Z":3,"_":2,"a":null,"b":[{"x":[{"c":0,"d":0}],"y":1},3],"é":1})");
}

}  // namespace
}  // namespace myriad::testing
