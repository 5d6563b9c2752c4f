// Ids for tool calls whose format carries none (deepseek): `chatcmpl-tool-` and 32 hex digits,
// as vLLM writes them. Random by default; seeded for reproducible output and tests. Each call of
// a generator gives the next id, so the calls of one response never share one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace myriad::api {

using ToolCallIdSource = std::function<std::string()>;

// 128 random bits per id (std::random_device seeds each source).
ToolCallIdSource random_tool_call_ids();
// The same sequence of ids for the same seed.
ToolCallIdSource seeded_tool_call_ids(uint64_t seed);

}  // namespace myriad::api
