#pragma once

#include <string>

namespace myriad {

// The whole of the file at `path` (bytes as they are). A file that cannot be opened is bad
// input naming the flag that gave it: "{flag} {path}: cannot read the file".
std::string read_text_file(const std::string& path, const char* flag);

}  // namespace myriad
