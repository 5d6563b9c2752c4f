// Chat templates that ship inside the binary (sources in src/api/templates/).
#pragma once

namespace myriad::api {

// DeepSeek-V3/R1 with the tools declared in the system prompt (DeepSeek's own template leaves
// them out); the server's default for model_type deepseek_v3 when a request sends tools.
const char* deepseek_v3_tools_template();

}  // namespace myriad::api
