// libFuzzer target: the kimi_k2 output parser (reasoning and tool calls) is split-invariant and
// never crashes; see output_parser_fuzz.h for the input layout.
#include "output_parser_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const myriad::api::fuzzing::FuzzFamily family{
        {"kimi_k2", ""},
        {"<think>", "</think>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
         "<|tool_call_section_begin|>", "<|tool_call_section_end|>", "<|tool_call_begin|>",
         "<|tool_call_argument_begin|>", "<|tool_call_end|>", "functions.get_weather:0",
         "functions.mcp.fs.read:12", "{\"city\": \"北京\"}", "<|tool_call", " \n", "😀", "\xe2\x82"},
    };
    return myriad::api::fuzzing::fuzz_output_parser(family, data, size);
}
