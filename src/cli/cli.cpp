#include "cli/cli.h"

#include <cstdio>

namespace myriad::cli {

int main(int, char**) {
    std::puts("myriad");
    return 0;
}

}  // namespace myriad::cli
