// Checks of what an output parser promises a streaming client, shared by the unit tests and the
// fuzz targets (header-only, so both builds take it as is): feeding a text cut anywhere gives the
// same result as the whole text; the deltas add up to that result, tool-call deltas come header
// first and in order, and no delta holds a partial UTF-8 character.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/output_parser.h"
#include "tokenizer/utf8.h"

namespace myriad::api::testing {

struct StreamRun {
    ParsedOutput result;
    std::vector<OutputDelta> deltas;
};

// Feeds `text` cut at the sorted byte offsets `cuts`, then finishes. Generated ids come from a
// fixed seed, so runs of the same text can be compared.
inline StreamRun run_chunks(ParserOptions options, std::string_view text,
                            const std::vector<size_t>& cuts) {
    options.tool_call_ids = seeded_tool_call_ids(7);
    std::unique_ptr<OutputParser> parser = make_output_parser(options);
    StreamRun run;
    size_t at = 0;
    for (size_t cut : cuts) {
        if (cut <= at || cut >= text.size()) continue;
        run.deltas.push_back(parser->feed(text.substr(at, cut - at)));
        at = cut;
    }
    run.deltas.push_back(parser->feed(text.substr(at)));
    run.deltas.push_back(parser->finish());
    run.result = parser->result();
    return run;
}

inline std::string show(const std::optional<std::string>& s) {
    return s ? "\"" + *s + "\"" : "null";
}

// "" when equal, else what differs.
inline std::string compare(const ParsedOutput& want, const ParsedOutput& got) {
    if (want.reasoning != got.reasoning)
        return "reasoning " + show(got.reasoning) + " != " + show(want.reasoning);
    if (want.content != got.content)
        return "content " + show(got.content) + " != " + show(want.content);
    if (want.tool_calls.size() != got.tool_calls.size())
        return "tool call count " + std::to_string(got.tool_calls.size()) +
               " != " + std::to_string(want.tool_calls.size());
    for (size_t i = 0; i < want.tool_calls.size(); ++i) {
        const ToolCall &a = want.tool_calls[i], &b = got.tool_calls[i];
        std::string at = "tool call " + std::to_string(i) + ": ";
        if (a.id != b.id) return at + "id " + b.id + " != " + a.id;
        if (a.name != b.name) return at + "name " + b.name + " != " + a.name;
        if (a.arguments != b.arguments)
            return at + "arguments " + b.arguments + " != " + a.arguments;
        if (a.complete != b.complete) return at + "complete flag differs";
    }
    return "";
}

// "" when the deltas of `run` add up to its result and each is well-formed.
inline std::string check_deltas(const StreamRun& run) {
    std::string reasoning, content;
    std::vector<ToolCall> calls;
    for (const OutputDelta& d : run.deltas) {
        if (!utf8::is_valid(d.reasoning) || !utf8::is_valid(d.content))
            return "a text delta is not valid UTF-8";
        reasoning += d.reasoning;
        content += d.content;
        for (const ToolCallDelta& t : d.tool_calls) {
            if (!utf8::is_valid(t.arguments)) return "an argument delta is not valid UTF-8";
            if (t.index == static_cast<int>(calls.size())) {
                if (!t.id || !t.name || t.type != "function")
                    return "the first delta of a tool call lacks id, name or type";
                if (!utf8::is_valid(*t.id) || !utf8::is_valid(*t.name))
                    return "a tool-call header is not valid UTF-8";
                calls.push_back({*t.id, *t.name, "", false});
            } else if (t.index < 0 || t.index > static_cast<int>(calls.size())) {
                return "tool-call delta index " + std::to_string(t.index) + " out of order";
            } else if (t.id || t.name || t.type) {
                return "a later delta of a tool call repeats its header";
            } else if (t.arguments.empty()) {
                return "an empty argument delta";
            }
            calls[t.index].arguments += t.arguments;
        }
    }
    const ParsedOutput& r = run.result;
    if (reasoning != r.reasoning.value_or("")) return "reasoning deltas != result";
    if (content != r.content.value_or("")) return "content deltas != result";
    if (r.content && r.content->empty()) return "content is set but empty";
    if (calls.size() != r.tool_calls.size()) return "tool-call deltas != result (count)";
    for (size_t i = 0; i < calls.size(); ++i) {
        if (calls[i].id != r.tool_calls[i].id || calls[i].name != r.tool_calls[i].name ||
            calls[i].arguments != r.tool_calls[i].arguments)
            return "tool-call deltas != result (call " + std::to_string(i) + ")";
    }
    if (r.reasoning && !utf8::is_valid(*r.reasoning)) return "reasoning is not valid UTF-8";
    return "";
}

// Runs `text` cut at `cuts` and checks it against the whole-text result `whole`; "" when fine.
inline std::string check_split(const ParserOptions& options, std::string_view text,
                               const std::vector<size_t>& cuts, const ParsedOutput& whole) {
    StreamRun run = run_chunks(options, text, cuts);
    std::string e = compare(whole, run.result);
    if (e.empty()) e = check_deltas(run);
    if (e.empty()) return e;
    std::string where = "cuts at";
    for (size_t c : cuts) where += " " + std::to_string(c);
    return where + ": " + e;
}

// A small deterministic generator for split points (the same in every build).
struct SplitRng {
    uint64_t state;
    uint64_t next() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
    }
};

// Random cuts with chunks of 1..max_chunk bytes.
inline std::vector<size_t> random_cuts(SplitRng& rng, size_t size, size_t max_chunk) {
    std::vector<size_t> cuts;
    for (size_t at = 1 + rng.next() % max_chunk; at < size; at += 1 + rng.next() % max_chunk)
        cuts.push_back(at);
    return cuts;
}

}  // namespace myriad::api::testing
