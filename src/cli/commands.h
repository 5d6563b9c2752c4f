// The subcommands. Each registers its flags on the CLI11 app and returns the function to run.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace myriad::cli {

using Run = std::function<int()>;

Run add_generate(CLI::App& app);
Run add_inspect(CLI::App& app);
Run add_tokenize(CLI::App& app);
Run add_detokenize(CLI::App& app);
Run add_chat_template(CLI::App& app);
Run add_bench_model(CLI::App& app);
Run add_serve(CLI::App& app);
Run add_chat(CLI::App& app);
Run add_quantize(CLI::App& app);
Run add_eval(CLI::App& app);

Run add_plan(CLI::App& app);
Run add_pull(CLI::App& app);
Run add_service(CLI::App& app);
Run add_bench(CLI::App& app);

// MODEL as given (ORG/NAME[@REVISION] in the HF cache: its snapshot folder), or the shipped model
// when empty.
std::string resolve_model(const std::string& model);

}  // namespace myriad::cli
