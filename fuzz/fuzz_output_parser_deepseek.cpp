// libFuzzer target: the deepseek_v3 / deepseek_v31 output parsers (reasoning and both call
// formats) are split-invariant and never crash; see output_parser_fuzz.h for the input layout.
#include "output_parser_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const myriad::api::fuzzing::FuzzFamily family{
        {"deepseek_v3", "deepseek_v31"},
        {"<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
         "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "function",
         "get_weather\n", "```json\n", "\n```", "{\"x\": [1, \"`\"]}", "<｜tool▁", " \n", "漢",
         "\xef\xbd"},
    };
    return myriad::api::fuzzing::fuzz_output_parser(family, data, size);
}
