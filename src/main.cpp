// The myriad executable: all subcommands live in src/cli.
#include "cli/cli.h"

int main(int argc, char** argv) {
    return myriad::cli::main(argc, argv);
}
