#include "util/text_file.h"

#include <fstream>
#include <sstream>

#include "util/error.h"

namespace myriad {

std::string read_text_file(const std::string& path, const char* flag) {
    std::ifstream f(path, std::ios::binary);
    if (!f) bad_input("{} {}: cannot read the file", flag, path);
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) bad_input("{} {}: reading the file failed", flag, path);
    return ss.str();
}

}  // namespace myriad
