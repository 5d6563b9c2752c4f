// The body of the output-parser fuzz targets. Input: a flags byte (think-opening prompt,
// reasoning parser, tools, which tool parser), a seed byte for a random chunking, two bytes for
// a cut point, then the model output, where bytes 0x10..0x1f stand for the family's markers (so
// mutations make marker sequences easily; literal markers in the input count too). Property:
// no crash, and the output cut in two at the chosen point, or in random chunks, gives the
// whole-text result, with deltas that add up to it and hold no partial UTF-8 character.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "output_parser_harness.h"

namespace myriad::api::fuzzing {

struct FuzzFamily {
    std::vector<std::string> tool_parsers;  // chosen by the flags byte
    std::vector<std::string> markers;       // what bytes 0x10.. stand for
};

inline void fail(const char* what, const std::string& detail, const std::string& text) {
    std::fprintf(stderr, "output parser %s: %s\ntext (%zu bytes): %s\n", what, detail.c_str(),
                 text.size(), text.c_str());
    std::abort();
}

inline int fuzz_output_parser(const FuzzFamily& family, const uint8_t* data, size_t size) {
    if (size < 4) return 0;
    const uint8_t flags = data[0], chunk_seed = data[1];
    const size_t cut_at = data[2] | (size_t{data[3]} << 8);
    std::string text;
    for (size_t i = 4; i < size; ++i) {
        uint8_t b = data[i];
        if (b >= 0x10 && b < 0x10 + family.markers.size())
            text += family.markers[b - 0x10];
        else
            text += static_cast<char>(b);
    }

    ParserOptions o;
    o.prompt_ends_in_think = flags & 1;
    o.reasoning_parser = (flags & 2) ? "kimi_k2" : "";
    o.tools_enabled = !(flags & 4);
    o.tool_parser = family.tool_parsers[(flags >> 3) % family.tool_parsers.size()];

    testing::StreamRun whole = testing::run_chunks(o, text, {});
    std::string e = testing::check_deltas(whole);
    if (!e.empty()) fail("deltas", e, text);
    e = testing::check_split(o, text, {text.empty() ? 0 : cut_at % text.size()}, whole.result);
    if (!e.empty()) fail("two-chunk split", e, text);
    testing::SplitRng rng{chunk_seed};
    e = testing::check_split(o, text, testing::random_cuts(rng, text.size(), 1 + chunk_seed % 8),
                             whole.result);
    if (!e.empty()) fail("random chunks", e, text);
    return 0;
}

}  // namespace myriad::api::fuzzing
