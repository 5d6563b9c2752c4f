// Subcommand dispatch: parses flags, runs the command, prints one line and exits 2 on bad input.
#pragma once

namespace myriad::cli {

int main(int argc, char** argv);

}  // namespace myriad::cli
