// The schema compiler: documents a schema allows are accepted whole, others are refused at
// the first byte that cannot be completed; unsupported keywords are errors naming them.
#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "util/error.h"

using namespace myriad::grammar;

namespace {

bool accepts(const std::shared_ptr<const Grammar>& g, std::string_view doc) {
    auto vocab =
        std::make_shared<const Vocabulary>(std::vector<std::string>{"x"}, std::vector<TokenId>{});
    Matcher m(g, vocab);
    return m.accept_bytes(doc) && m.is_accepting();
}

bool accepts(std::string_view schema, std::string_view doc) {
    return accepts(compile_json_schema_text(schema), doc);
}

std::string error_of(std::string_view schema) {
    try {
        compile_json_schema_text(schema);
    } catch (const myriad::Error& e) {
        EXPECT_EQ(e.exit_status(), 2);
        return e.what();
    }
    return "";
}

}  // namespace

TEST(JsonSchemaGrammar, ObjectPropertiesInSchemaOrderCompact) {
    const char* s = R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}},
                        "required":["b"],"additionalProperties":false})";
    EXPECT_TRUE(accepts(s, R"({"b":1,"a":"x"})"));
    EXPECT_TRUE(accepts(s, R"({"b":-20})"));
    EXPECT_FALSE(accepts(s, R"({"a":"x","b":1})"));  // schema order
    EXPECT_FALSE(accepts(s, R"({"a":"x"})"));        // b required
    EXPECT_FALSE(accepts(s, R"({"b": 1})"));         // compact
    EXPECT_FALSE(accepts(s, R"({"b":1,"c":2})"));    // no additional
    EXPECT_FALSE(accepts(s, R"({"b":01})"));
}

TEST(JsonSchemaGrammar, AdditionalPropertiesNeverRepeatAListedKey) {
    const char* s = R"({"type":"object","properties":{"ab":{"type":"integer"}},
                        "additionalProperties":{"type":"boolean"}})";
    EXPECT_TRUE(accepts(s, R"({"ab":1,"a":true,"abc":false,"b":true})"));
    EXPECT_FALSE(accepts(s, R"({"ab":1,"ab":true})"));
    EXPECT_FALSE(accepts(s, R"({"ab":1,"x":1})"));
    EXPECT_TRUE(accepts(s, R"({})"));
}

TEST(JsonSchemaGrammar, StringsLengthsEscapesAndUtf8) {
    const char* s = R"({"type":"string","minLength":2,"maxLength":3})";
    EXPECT_TRUE(accepts(s, "\"ab\""));
    EXPECT_TRUE(accepts(s, "\"\\n\\u00e9\xc3\xa9\""));  // three characters
    EXPECT_FALSE(accepts(s, "\"a\""));
    EXPECT_FALSE(accepts(s, "\"abcd\""));
    EXPECT_FALSE(accepts(s, "\"a\nb\""));            // raw control character
    EXPECT_FALSE(accepts(s, "\"\\ud83d\\ude00\""));  // surrogate escapes are never generated
    EXPECT_FALSE(accepts(s, "\"\xc3(\""));           // invalid UTF-8
}

TEST(JsonSchemaGrammar, PatternIsASearchUnlessAnchored) {
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"^[a-z]+-[0-9]{2,3}$"})", "\"ab-123\""));
    EXPECT_FALSE(accepts(R"({"type":"string","pattern":"^[a-z]+-[0-9]{2,3}$"})", "\"ab-1\""));
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"ab"})", "\"xxabyy\""));
    EXPECT_FALSE(accepts(R"({"type":"string","pattern":"ab"})", "\"xxa\""));
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"^a\"b$"})", "\"a\\\"b\""));
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"^(foo|ba[rz])?$"})", "\"\""));
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"^(foo|ba[rz])?$"})", "\"baz\""));
}

TEST(JsonSchemaGrammar, IntegerBounds) {
    const char* s = R"({"type":"integer","minimum":-15,"maximum":120})";
    for (int v = -30; v <= 200; ++v)
        EXPECT_EQ(accepts(s, std::to_string(v)), v >= -15 && v <= 120) << v;
    EXPECT_FALSE(accepts(s, "-0"));
    EXPECT_TRUE(accepts(R"({"type":"integer"})", "-0"));  // 0, as llguidance allows
    const char* t = R"({"type":"integer","exclusiveMinimum":99})";
    EXPECT_FALSE(accepts(t, "99"));
    EXPECT_TRUE(accepts(t, "100"));
    EXPECT_TRUE(accepts(t, "123456789012"));
}

TEST(JsonSchemaGrammar, NumberBounds) {
    const char* s = R"({"type":"number","minimum":-2,"exclusiveMaximum":3})";
    EXPECT_TRUE(accepts(s, "2.999"));
    EXPECT_TRUE(accepts(s, "-2.0"));
    EXPECT_TRUE(accepts(s, "-1.5"));
    EXPECT_FALSE(accepts(s, "3"));
    EXPECT_FALSE(accepts(s, "3.0"));
    EXPECT_FALSE(accepts(s, "-2.01"));
    EXPECT_TRUE(accepts(R"({"type":"number"})", "-1.5e+10"));
    EXPECT_NE(error_of(R"({"type":"number","minimum":0.5})").find("minimum"), std::string::npos);
}

TEST(JsonSchemaGrammar, ArraysTuplesAndCounts) {
    const char* s = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],
                        "items":{"type":"boolean"},"minItems":1,"maxItems":4})";
    EXPECT_TRUE(accepts(s, R"(["a"])"));
    EXPECT_TRUE(accepts(s, R"(["a",1,true,false])"));
    EXPECT_FALSE(accepts(s, R"([])"));
    EXPECT_FALSE(accepts(s, R"(["a",1,true,false,true])"));
    EXPECT_FALSE(accepts(s, R"(["a","b"])"));
    EXPECT_TRUE(accepts(R"({"type":"array","items":{"type":"null"}})", "[]"));
    EXPECT_TRUE(accepts(R"({"type":"array","items":{"type":"null"}})", "[null,null,null]"));
}

TEST(JsonSchemaGrammar, RefsAndRecursion) {
    const char* s = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
        "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],
        "additionalProperties":false}},"$ref":"#/$defs/node"})";
    EXPECT_TRUE(accepts(s, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
    EXPECT_FALSE(accepts(s, R"({"v":1,"kids":[{}]})"));
    EXPECT_NE(error_of(R"({"$ref":"#"})").find("admits no"), std::string::npos);
    EXPECT_NE(error_of(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})").find("recurses"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"$ref":"http://x/y.json"})").find("local"), std::string::npos);
}

TEST(JsonSchemaGrammar, EnumConstAnyOfAllOfTypeArrays) {
    EXPECT_TRUE(accepts(R"({"enum":["a",1,null,{"k":[1]}]})", R"({"k":[1]})"));
    EXPECT_FALSE(accepts(R"({"enum":["a",1]})", "2"));
    EXPECT_TRUE(accepts(R"({"const":"x\ny"})", R"("x\ny")"));
    EXPECT_TRUE(accepts(R"({"type":["string","null"]})", "null"));
    EXPECT_FALSE(accepts(R"({"type":["string","null"]})", "1"));
    const char* any =
        R"({"anyOf":[{"type":"integer","maximum":3},{"type":"string","maxLength":1}]})";
    EXPECT_TRUE(accepts(any, "3"));
    EXPECT_TRUE(accepts(any, "\"z\""));
    EXPECT_FALSE(accepts(any, "4"));
    const char* all = R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},
        "required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]})";
    EXPECT_TRUE(accepts(all, R"({"a":1,"b":"x"})"));
    EXPECT_FALSE(accepts(all, R"({"a":1})"));
    // additionalProperties false in one branch forbids what only the other lists.
    EXPECT_NE(error_of(R"({"allOf":[{"type":"object","properties":{"a":{}},"required":["a"]},
        {"properties":{"b":{}},"additionalProperties":false}]})")
                  .find("admits no"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"oneOf":[{"type":"number"},{"type":"integer"}]})").find("oneOf"),
              std::string::npos);
    EXPECT_TRUE(accepts(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})", "7"));
}

TEST(JsonSchemaGrammar, Formats) {
    EXPECT_TRUE(accepts(R"({"type":"string","format":"date"})", "\"2024-02-28\""));
    EXPECT_FALSE(accepts(R"({"type":"string","format":"date"})", "\"2024-02-30\""));
    EXPECT_TRUE(accepts(R"({"type":"string","format":"date-time"})", "\"2024-12-31T23:59:59.5Z\""));
    EXPECT_TRUE(accepts(R"({"type":"string","format":"uuid"})",
                        "\"123e4567-e89b-12d3-a456-426614174000\""));
    EXPECT_TRUE(accepts(R"({"type":"string","format":"email"})", "\"a.b@example.com\""));
    EXPECT_FALSE(accepts(R"({"type":"string","format":"email"})", "\"a.b@\""));
    EXPECT_NE(error_of(R"({"type":"string","format":"hostname-x"})").find("format"),
              std::string::npos);
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
    for (const char* k : {"not", "uniqueItems", "patternProperties", "if", "multipleOf", "contains",
                          "propertyNames", "dependentRequired"}) {
        std::string s = std::string(R"({"type":"object",")") + k + R"(":{"x":1}})";
        std::string e = error_of(s);
        EXPECT_NE(e.find(std::string("'") + k + "'"), std::string::npos) << e;
    }
    EXPECT_NE(error_of("{\"type\":\"string\",\"pattern\":\"(?=a)\"}").find("pattern"),
              std::string::npos);
    EXPECT_NE(error_of("{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}").find("pattern"),
              std::string::npos);
    EXPECT_NE(error_of("{\"type\":\"strin\"}").find("type"), std::string::npos);
    EXPECT_NE(error_of("not json").find("not valid JSON"), std::string::npos);
    EXPECT_NE(error_of("false").find("admits no"), std::string::npos);
}

TEST(JsonSchemaGrammar, JsonObjectAndCache) {
    auto g = any_json_grammar(true);
    EXPECT_TRUE(accepts(g, R"({"a":[1,2.5,{"b":null}],"c":"d"})"));
    EXPECT_FALSE(accepts(g, "[1]"));
    EXPECT_TRUE(accepts(any_json_grammar(false), "[1,\"x\",true]"));
    auto a = compile_json_schema_text(std::string_view(R"({"type": "integer"})"));
    auto b = compile_json_schema_text(std::string_view(R"({ "type":"integer" })"));
    EXPECT_EQ(a.get(), b.get());
}

TEST(JsonSchemaGrammar, BranchesWithoutAFiniteDocumentAreNeverEntered) {
    // r: arrays that must hold an r: no finite document, so only null remains.
    const char* s = R"({"anyOf":[{"type":"null"},{"$ref":"#/$defs/r"}],
        "$defs":{"r":{"type":"array","items":{"$ref":"#/$defs/r"},"minItems":1}}})";
    EXPECT_TRUE(accepts(s, "null"));
    auto vocab =
        std::make_shared<const Vocabulary>(std::vector<std::string>{"x"}, std::vector<TokenId>{});
    Matcher m(compile_json_schema_text(s), vocab);
    EXPECT_FALSE(m.accept_bytes("["));
}
