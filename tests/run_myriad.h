// Runs the myriad executable as a user would, capturing its exit status and output.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "temp_dir.h"

namespace myriad::testing {

struct Result {
    int status = -1;  // exit status; -1 when killed by a signal
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// `args` are appended to the executable's path as shell words.
inline Result run_myriad(const std::string& args) {
    TempDir tmp;
    std::string cmd =
        std::string(MYRIAD_BINARY) + " " + args + " >" + tmp.file("out") + " 2>" + tmp.file("err");
    int rc = std::system(cmd.c_str());
    Result r;
    if (WIFEXITED(rc)) r.status = WEXITSTATUS(rc);
    r.out = slurp(tmp.file("out"));
    r.err = slurp(tmp.file("err"));
    return r;
}

}  // namespace myriad::testing
